"""Independent reference ("oracle") for the canonical KV-cache block hash, spec v1.

This module exists so that the conformance vectors check the Go core instead of
restating it: it shares no code with the core and is built only on the `xxhash`
package (a wrapper of the C reference XXH3) and the standard library. It is
deliberately plain -- one obvious loop per rule -- so that a reader can check it
against docs/spec and the reference facts line by line. Speed does not matter here.

All hashes, seeds and mm hashes are Python ints in [0, 2**64).
"""

import struct

import xxhash

SPEC_VERSION = "v1"

# The seed of every spec-v1 hash: local block hashes without options, the
# sequence chain, and raw_hash.
BASE_SEED = 1337

U32_LIMIT = 2**32
U64_LIMIT = 2**64


def _xxh3_64(data: bytes, seed: int) -> int:
    return xxhash.xxh3_64_intdigest(data, seed=seed)


def raw_hash(data: bytes) -> int:
    """XXH3-64 of arbitrary bytes with the spec seed (the "test data" vector)."""
    return _xxh3_64(data, BASE_SEED)


def seed(lora_name=None, cache_namespace=None) -> int:
    """The seed of the local block hashes for these options.

    Options change the seed rather than the hashed bytes, so a block's bytes are
    always just its tokens (and mm hashes). Each term uses a different xxh3 seed
    (0 for LoRA, 1 for the namespace) so that the same string used as a LoRA name
    and as a namespace gives different seeds. Empty strings count as absent, as
    in Dynamo, so that "" and None name the same cache.
    """
    result = BASE_SEED
    if lora_name:
        result = (result + _xxh3_64(lora_name.encode("utf-8"), 0)) % U64_LIMIT
    if cache_namespace:
        result = (result + _xxh3_64(cache_namespace.encode("utf-8"), 1)) % U64_LIMIT
    return result


def _block_token_windows(tokens, block_size, eagle):
    """The token slices that are hashed, one per block.

    Plain mode: full blocks of block_size tokens; a trailing partial block is
    dropped because its content can still grow.
    Eagle mode: windows of block_size + 1 tokens (each block plus the first token
    of the next one, the "bigram" SGLang EAGLE emits) taken with stride
    block_size; a window needs its extra token, so there are (n - 1) // block_size
    of them, and none for an empty prompt.
    """
    n = len(tokens)
    if eagle:
        count = (n - 1) // block_size if n > 0 else 0
        width = block_size + 1
    else:
        count = n // block_size
        width = block_size
    return [tokens[i * block_size : i * block_size + width] for i in range(count)]


def block_hashes(
    tokens,
    block_size,
    lora_name=None,
    cache_namespace=None,
    eagle=False,
    mm_hashes=None,
):
    """Local (position-independent) hashes of the full blocks of `tokens`.

    mm_hashes, if given, has one entry per block (it may be shorter than the
    number of blocks; missing entries mean "no media"): None or a list of u64
    mm hashes of the media objects in that block.
    """
    if block_size <= 0:
        raise ValueError("block_size must be positive, got %d" % block_size)
    for token in tokens:
        if not 0 <= token < U32_LIMIT:
            raise ValueError("token %d is not a u32" % token)

    windows = _block_token_windows(tokens, block_size, eagle)
    mm_hashes = mm_hashes or []
    if len(mm_hashes) > len(windows):
        # An entry for a block that does not exist is a caller bug, not data to drop.
        raise ValueError(
            "mm_hashes has %d entries but there are only %d blocks"
            % (len(mm_hashes), len(windows))
        )

    block_seed = seed(lora_name, cache_namespace)
    result = []
    for i, window in enumerate(windows):
        data = b"".join(struct.pack("<I", token) for token in window)
        entry = mm_hashes[i] if i < len(mm_hashes) else None
        if entry is not None:
            for mm_hash in entry:
                if not 0 <= mm_hash < U64_LIMIT:
                    raise ValueError("mm hash %d is not a u64" % mm_hash)
            # Sorted so that the order in which an engine lists a block's media
            # objects does not change the hash; offsets are not hashed at all.
            data += b"".join(struct.pack("<Q", h) for h in sorted(entry))
        result.append(_xxh3_64(data, block_seed))
    return result


def chain_step(parent_seq: int, local: int) -> int:
    """Sequence hash of a block from its parent's sequence hash and its local hash.

    The chain always uses the spec seed: options are already folded into the
    local hashes, and a fixed chain keeps sequence hashes comparable.
    """
    return _xxh3_64(struct.pack("<QQ", parent_seq, local), BASE_SEED)


def sequence_hashes(local):
    """Prefix-dependent hashes: seq[0] = local[0], seq[i] = chain_step(seq[i-1], local[i])."""
    result = []
    for i, local_hash in enumerate(local):
        result.append(local_hash if i == 0 else chain_step(result[-1], local_hash))
    return result
