"""Generate the conformance vectors of the current spec from the oracle.

    python generate.py --out DIR     (or: make vectors)

Writes one DIR/<group>.json per group; the schema is documented in
conformance/README.md. The output is a pure function of this file and the
oracle: every random input comes from random.Random(<fixed seed per group>), so a
group does not shift when another one changes, and the files are byte-identical
from run to run (test_oracle.py checks this against the committed vectors).
"""

import argparse
import json
import os
import random

import kvhash_oracle as oracle

U32_MAX = 2**32 - 1
U64_MAX = 2**64 - 1

# The only published literals (Dynamo's own tests): tokens 1..12, block size 4.
PUBLIC_TOKENS = list(range(1, 13))
PUBLIC_LOCAL = [14643705804678351452, 16777012769546811212, 483935686894639516]
PUBLIC_SEQUENCE = [14643705804678351452, 4945711292740353085, 12583592247330656132]
PUBLIC_RAW_INPUT = b"test data"
PUBLIC_RAW_HASH = 13226331709069118873

# Token values where a wrong width, sign or byte order shows.
TOKEN_EXTREMES = [0, 1, 2**31 - 1, 2**31, 2**32 - 2, U32_MAX]


def random_tokens(rng, count):
    return [rng.getrandbits(32) for _ in range(count)]


def random_u64s(rng, count):
    return [rng.getrandbits(64) for _ in range(count)]


def u64_strings(values):
    # u64 values are decimal strings: JSON numbers lose precision above 2**53 in
    # JavaScript and in many other parsers.
    return [str(v) for v in values]


def options_json(lora_name, cache_namespace, eagle, mm_hashes):
    # Every key is always present so that readers need no defaulting logic.
    if mm_hashes is not None:
        mm_hashes = [None if entry is None else u64_strings(entry) for entry in mm_hashes]
    return {
        "lora_name": lora_name,
        "cache_namespace": cache_namespace,
        "eagle": eagle,
        "mm_hashes": mm_hashes,
    }


def block_case(name, tokens, block_size, lora_name=None, cache_namespace=None, eagle=False, mm_hashes=None):
    local = oracle.block_hashes(tokens, block_size, lora_name, cache_namespace, eagle, mm_hashes)
    return {
        "kind": "block",
        "name": name,
        "tokens": list(tokens),
        "block_size": block_size,
        "options": options_json(lora_name, cache_namespace, eagle, mm_hashes),
        "seed": str(oracle.seed(lora_name, cache_namespace)),
        "block_hashes": u64_strings(local),
        "sequence_hashes": u64_strings(oracle.sequence_hashes(local)),
    }


def error_case(name, error, tokens, block_size, lora_name=None, cache_namespace=None, eagle=False, mm_hashes=None):
    # An error vector is only worth committing if the oracle rejects it too.
    try:
        oracle.block_hashes(tokens, block_size, lora_name, cache_namespace, eagle, mm_hashes)
    except ValueError:
        pass
    else:
        raise RuntimeError("error case %r is accepted by the oracle" % name)
    return {
        "kind": "error",
        "name": name,
        "tokens": list(tokens),
        "block_size": block_size,
        "options": options_json(lora_name, cache_namespace, eagle, mm_hashes),
        "error": error,
    }


def seed_case(name, lora_name, cache_namespace):
    return {
        "kind": "seed",
        "name": name,
        "lora_name": lora_name,
        "cache_namespace": cache_namespace,
        "seed": str(oracle.seed(lora_name, cache_namespace)),
    }


def chain_case(name, local):
    return {
        "kind": "chain",
        "name": name,
        "block_hashes": u64_strings(local),
        "sequence_hashes": u64_strings(oracle.sequence_hashes(local)),
    }


def raw_case(name, data):
    return {"kind": "raw", "name": name, "bytes_hex": data.hex(), "hash": str(oracle.raw_hash(data))}


def check_public_literals():
    """Fail loudly if the oracle does not reproduce the published values.

    Everything else in the vectors is only as good as the oracle, and these
    literals are its one external anchor. (Not `assert`: python -O drops it.)
    """
    local = oracle.block_hashes(PUBLIC_TOKENS, 4)
    sequence = oracle.sequence_hashes(local)
    raw = oracle.raw_hash(PUBLIC_RAW_INPUT)
    if local != PUBLIC_LOCAL or sequence != PUBLIC_SEQUENCE or raw != PUBLIC_RAW_HASH:
        raise SystemExit(
            "oracle does not reproduce the public reference vectors:\n"
            "  local    %s, want %s\n  sequence %s, want %s\n  raw      %s, want %s"
            % (local, PUBLIC_LOCAL, sequence, PUBLIC_SEQUENCE, raw, PUBLIC_RAW_HASH)
        )


def wrapping_namespace(lora_name, wraps):
    """A namespace whose seed term, added to lora_name's, does (or does not) wrap past 2**64.

    Found by a deterministic scan so that the vectors are sure to exercise (and
    not exercise) the wrapping addition, whatever the hash values happen to be.
    """
    lora_term = oracle.seed(lora_name) - oracle.BASE_SEED
    for i in range(1000):
        namespace = "tenant-%d" % i
        namespace_term = oracle.seed(None, namespace) - oracle.BASE_SEED
        if (oracle.BASE_SEED + lora_term + namespace_term >= 2**64) == wraps:
            return namespace
    raise RuntimeError("no namespace found for wraps=%s" % wraps)


def group_public():
    cases = [block_case("dynamo_tokens_1_to_12_bs4", PUBLIC_TOKENS, 4)]
    # Each block alone: the local hash does not depend on the block's position.
    for start in range(0, 12, 4):
        block = PUBLIC_TOKENS[start : start + 4]
        cases.append(block_case("dynamo_single_block_%d_to_%d" % (block[0], block[-1]), block, 4))
    cases.append(raw_case("test_data", PUBLIC_RAW_INPUT))
    return "The published Dynamo reference vectors (tokens 1..12, block size 4) and the raw \"test data\" hash.", cases


def group_boundaries():
    rng = random.Random(1001)
    cases = []
    for block_size in (1, 2, 3, 4, 7, 16, 32, 64, 128, 512):
        # Every length is a prefix of one token list, so the vectors themselves
        # show that a block's hash does not depend on what follows it.
        tokens = random_tokens(rng, 3 * block_size + 2)
        lengths = {0, 1, block_size - 1, block_size, block_size + 1, 2 * block_size - 1,
                   2 * block_size, 3 * block_size, 3 * block_size + 1, 3 * block_size + 2}
        for length in sorted(lengths):
            cases.append(block_case("bs%d_len%d" % (block_size, length), tokens[:length], block_size))
    return "Lengths around block boundaries (0, 1, bs-1, bs, bs+1, ..., 3bs+2) for many block sizes; partial tails are dropped.", cases


def group_token_extremes():
    rng = random.Random(1002)
    cases = []
    for value in TOKEN_EXTREMES:
        for block_size in (1, 4, 16):
            cases.append(block_case("all_%d_bs%d" % (value, block_size), [value] * (2 * block_size), block_size))
    for block_size in (1, 2, 3, 4, 6, 16):
        cases.append(block_case("mixed_extremes_bs%d" % block_size, TOKEN_EXTREMES * 4, block_size))
    # Distinct bytes in every position: a big-endian or narrower encoding differs.
    cases.append(block_case("byte_order_bs4", [0x04030201, 0x08070605, 0x0C0B0A09, 0x100F0E0D], 4))
    cases.append(block_case("powers_of_256_bs4", [1, 256, 65536, 16777216], 4))
    tokens = [rng.choice(TOKEN_EXTREMES) if rng.random() < 0.5 else rng.getrandbits(32) for _ in range(64)]
    cases.append(block_case("random_with_extremes_bs16", tokens, 16))
    return "Token ids at the edges of u32 (0, 1, 2^31-1, 2^31, 2^32-2, 2^32-1) and byte-order canaries.", cases


def group_lora():
    rng = random.Random(1003)
    tokens = random_tokens(rng, 37)
    cases = []
    for lora in ("my-lora", "adapter_a", "adapter_b", "sql lora v2", "x" * 1000):
        label = "long" if len(lora) > 100 else lora.replace(" ", "_").replace("-", "_")
        cases.append(block_case("lora_%s_public_tokens_bs4" % label, PUBLIC_TOKENS, 4, lora_name=lora))
        cases.append(block_case("lora_%s_random_bs16" % label, tokens, 16, lora_name=lora))
    cases.append(block_case("lora_no_full_block", tokens[:3], 4, lora_name="my-lora"))
    cases.append(block_case("lora_empty_prompt", [], 16, lora_name="my-lora"))
    return "LoRA adapter name: seed = 1337 + xxh3_64(name, seed 0), nothing appended to the blocks.", cases


def group_namespace():
    rng = random.Random(1004)
    tokens = random_tokens(rng, 37)
    cases = []
    # "my-lora" is also a LoRA name in lora.json: as a namespace it gives a different seed.
    for namespace in ("tenant-a", "tenant-b", "cache-salt-0123456789abcdef", "my-lora"):
        label = namespace.replace("-", "_")
        cases.append(block_case("ns_%s_public_tokens_bs4" % label, PUBLIC_TOKENS, 4, cache_namespace=namespace))
        cases.append(block_case("ns_%s_random_bs16" % label, tokens, 16, cache_namespace=namespace))
    cases.append(block_case("ns_empty_prompt", [], 16, cache_namespace="tenant-a"))
    return "Cache namespace (cache_salt): seed += xxh3_64(namespace, seed 1), nothing appended to the blocks.", cases


def group_lora_namespace():
    rng = random.Random(1005)
    tokens = random_tokens(rng, 40)
    wraps = wrapping_namespace("my-lora", True)
    no_wrap = wrapping_namespace("my-lora", False)
    cases = [
        block_case("both_public_tokens_bs4", PUBLIC_TOKENS, 4, lora_name="my-lora", cache_namespace="tenant-a"),
        block_case("both_random_bs16", tokens, 16, lora_name="my-lora", cache_namespace="tenant-a"),
        # The two terms use different xxh3 seeds, so swapping the strings changes the seed.
        block_case("both_swapped_random_bs16", tokens, 16, lora_name="tenant-a", cache_namespace="my-lora"),
        block_case("both_same_string_random_bs16", tokens, 16, lora_name="shared", cache_namespace="shared"),
        block_case("both_seed_sum_wraps_bs4", PUBLIC_TOKENS, 4, lora_name="my-lora", cache_namespace=wraps),
        block_case("both_seed_sum_no_wrap_bs4", PUBLIC_TOKENS, 4, lora_name="my-lora", cache_namespace=no_wrap),
    ]
    return "LoRA and namespace together: seed = 1337 + lora term + namespace term, wrapping mod 2^64.", cases


def group_empty_names():
    rng = random.Random(1006)
    tokens = random_tokens(rng, 20)
    names = [
        ("lora_empty", "", None),
        ("ns_empty", None, ""),
        ("both_empty", "", ""),
        ("lora_empty_ns_set", "", "tenant-a"),
        ("lora_set_ns_empty", "my-lora", ""),
        # A single space is not empty: it counts as a name.
        ("lora_space", " ", None),
        ("ns_space", None, " "),
        # Names are hashed as their UTF-8 bytes, with no Unicode normalization:
        # precomposed and decomposed "é" are different names.
        ("lora_e_acute_precomposed", "caf\u00e9", None),
        ("lora_e_acute_decomposed", "cafe\u0301", None),
        ("lora_cjk", "\u65e5\u672c\u8a9e-lora", None),
        ("ns_emoji", None, "\U0001f999-tenant"),
        ("both_unicode", "\u00dcn\u00efc\u00f6d\u00e9", "\u0442\u0435\u043d\u0430\u043d\u0442"),
    ]
    cases = []
    for label, lora, namespace in names:
        cases.append(seed_case(label, lora, namespace))
        cases.append(block_case(label + "_bs4", tokens, 4, lora_name=lora, cache_namespace=namespace))
    return "Empty names count as absent (same hashes as no option); non-empty Unicode names are hashed as UTF-8.", cases


def group_multimodal():
    rng = random.Random(1007)
    tokens = random_tokens(rng, 14)  # 3 full blocks of 4 and a partial tail
    h1, h2, h3 = random_u64s(rng, 3)
    cases = [block_case("no_mm", tokens, 4)]
    # All of these hash exactly like no_mm.
    for label, mm in (("mm_empty_list", []), ("mm_all_null", [None, None, None]), ("mm_empty_entry", [[]])):
        cases.append(block_case(label, tokens, 4, mm_hashes=mm))
    cases += [
        block_case("one_object_block0", tokens, 4, mm_hashes=[[h1]]),
        block_case("one_object_block1", tokens, 4, mm_hashes=[None, [h1]]),
        block_case("objects_blocks0_and_2", tokens, 4, mm_hashes=[[h1], None, [h2]]),
        block_case("every_block", tokens, 4, mm_hashes=[[h1], [h2], [h3]]),
        # The same objects in any order give the same hash: they are sorted.
        block_case("three_objects_order_123", tokens, 4, mm_hashes=[[h1, h2, h3]]),
        block_case("three_objects_order_312", tokens, 4, mm_hashes=[[h3, h1, h2]]),
        block_case("three_objects_order_231", tokens, 4, mm_hashes=[[h2, h3, h1]]),
        # Duplicates are kept (sorted list, not a set).
        block_case("duplicate_object", tokens, 4, mm_hashes=[[h1, h1]]),
        block_case("mm_hash_zero", tokens, 4, mm_hashes=[[0]]),
        block_case("mm_hash_max", tokens, 4, mm_hashes=[[U64_MAX]]),
        block_case("mm_hash_max_then_zero", tokens, 4, mm_hashes=[[U64_MAX, 0]]),
        block_case("mm_hash_zero_then_max", tokens, 4, mm_hashes=[[0, U64_MAX]]),
        # Sorting is unsigned and numeric: a signed (i64) sort would put 2^63 first,
        # a sort of the decimal strings would put 10 before 9.
        block_case("unsigned_sort_order_a", tokens, 4, mm_hashes=[[2**63, 2**63 - 1, 1]]),
        block_case("unsigned_sort_order_b", tokens, 4, mm_hashes=[[1, 2**63, 2**63 - 1]]),
        block_case("numeric_sort_order_a", tokens, 4, mm_hashes=[[10, 9]]),
        block_case("numeric_sort_order_b", tokens, 4, mm_hashes=[[9, 10]]),
        block_case("with_lora", tokens, 4, lora_name="my-lora", mm_hashes=[[h1], None, [h2, h3]]),
        block_case("with_namespace", tokens, 4, cache_namespace="tenant-a", mm_hashes=[[h1], None, [h2, h3]]),
        block_case("with_lora_and_namespace", tokens, 4, lora_name="my-lora", cache_namespace="tenant-a",
                   mm_hashes=[[h3, h2, h1]]),
        # 13 tokens hold 3 eagle windows of 5 tokens; one entry per window.
        block_case("with_eagle", tokens[:13], 4, eagle=True, mm_hashes=[None, [h2, h1], [h3]]),
        block_case("bs16_two_blocks", random_tokens(rng, 32), 16, mm_hashes=[random_u64s(rng, 5), random_u64s(rng, 2)]),
    ]
    return ("Multimodal: a block's mm hashes, sorted ascending, are appended as LE u64 after its tokens; "
            "null or missing entries mean no media.", cases)


def group_eagle():
    rng = random.Random(1008)
    cases = []
    for block_size in (1, 2, 4, 16, 64):
        tokens = random_tokens(rng, 3 * block_size + 2)
        lengths = {0, 1, block_size, block_size + 1, 2 * block_size, 2 * block_size + 1,
                   3 * block_size + 1, 3 * block_size + 2}
        for length in sorted(lengths):
            cases.append(block_case("eagle_bs%d_len%d" % (block_size, length), tokens[:length], block_size, eagle=True))
    tokens13 = list(range(1, 14))
    cases += [
        block_case("eagle_tokens_1_to_13_bs4", tokens13, 4, eagle=True),
        block_case("eagle_lora_bs4", tokens13, 4, lora_name="my-lora", eagle=True),
        block_case("eagle_namespace_bs4", tokens13, 4, cache_namespace="tenant-a", eagle=True),
        block_case("eagle_lora_namespace_bs4", tokens13, 4, lora_name="my-lora", cache_namespace="tenant-a", eagle=True),
    ]
    return ("Eagle mode: windows of block_size+1 tokens with stride block_size, "
            "(n-1)//block_size of them (none when n == 0).", cases)


def group_long_chains():
    rng = random.Random(1009)
    cases = [
        # A partial tail is added to each so that it is also dropped at scale.
        block_case("blocks1024_bs16", random_tokens(rng, 1024 * 16 + 5), 16),
        block_case("blocks1500_bs4", random_tokens(rng, 1500 * 4 + 3), 4),
        block_case("blocks2048_bs1_lora_namespace", random_tokens(rng, 2048), 1, lora_name="my-lora",
                   cache_namespace="tenant-a"),
    ]
    return "Long prompts (1000+ blocks): the sequence chain must hold over its whole length.", cases


def group_seeds():
    wraps = wrapping_namespace("my-lora", True)
    cases = [
        seed_case("none", None, None),
        seed_case("lora_my_lora", "my-lora", None),
        seed_case("lora_adapter_a", "adapter_a", None),
        seed_case("lora_long", "x" * 1000, None),
        seed_case("ns_tenant_a", None, "tenant-a"),
        seed_case("ns_my_lora", None, "my-lora"),
        seed_case("ns_long", None, "y" * 4096),
        seed_case("both", "my-lora", "tenant-a"),
        seed_case("both_swapped", "tenant-a", "my-lora"),
        seed_case("both_same_string", "shared", "shared"),
        seed_case("both_sum_wraps", "my-lora", wraps),
        seed_case("single_byte_lora", "a", None),
        seed_case("single_byte_ns", None, "a"),
    ]
    return "Block-hash seeds from the options, alone (lora_name and cache_namespace may be null).", cases


def group_chains():
    rng = random.Random(1010)
    cases = [
        chain_case("empty", []),
        chain_case("single_zero", [0]),
        chain_case("single_max", [U64_MAX]),
        chain_case("zero_zero", [0, 0]),
        chain_case("max_max", [U64_MAX, U64_MAX]),
        chain_case("zero_max", [0, U64_MAX]),
        chain_case("max_zero", [U64_MAX, 0]),
        chain_case("seed_value", [1337, 1337]),
        chain_case("public_locals", PUBLIC_LOCAL),
        chain_case("repeated_local", [PUBLIC_LOCAL[0]] * 10),
        chain_case("mixed_extremes", [0, U64_MAX, 1, 2**63, 2**63 - 1, 2**32, 2**32 - 1, 0]),
    ]
    for length in (2, 3, 16, 100):
        cases.append(chain_case("random_%d" % length, random_u64s(rng, length)))
    return "The sequence chain over arbitrary u64 local hashes (always seed 1337).", cases


def group_raw():
    rng = random.Random(1011)
    cases = []
    # Lengths on both sides of every XXH3 code path boundary (0, 1-3, 4-8, 9-16,
    # 17-128, 129-240, >240 and its 64/1024-byte stripes and blocks), for
    # bindings that bring their own XXH3.
    for length in (0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 63, 64, 65, 127, 128, 129,
                   239, 240, 241, 255, 256, 1023, 1024, 1025, 4096):
        cases.append(raw_case("random_len%d" % length, bytes(rng.getrandbits(8) for _ in range(length))))
    return "XXH3-64 with seed 1337 over raw bytes of many lengths.", cases


def group_errors():
    tokens8 = PUBLIC_TOKENS[:8]
    cases = [
        error_case("bs0_public_tokens", "block_size_zero", PUBLIC_TOKENS, 0),
        error_case("bs0_empty_prompt", "block_size_zero", [], 0),
        error_case("bs0_eagle", "block_size_zero", PUBLIC_TOKENS, 0, eagle=True),
        error_case("bs_minus1", "block_size_negative", PUBLIC_TOKENS, -1),
        error_case("bs_minus4", "block_size_negative", PUBLIC_TOKENS, -4),
        # One entry more than there are blocks, even if the extra entry is null.
        error_case("mm_3_entries_2_blocks", "mm_hashes_too_long", tokens8, 4, mm_hashes=[None, None, None]),
        error_case("mm_1_entry_0_blocks", "mm_hashes_too_long", PUBLIC_TOKENS[:3], 4, mm_hashes=[[1]]),
        error_case("mm_1_entry_empty_prompt", "mm_hashes_too_long", [], 4, mm_hashes=[None]),
        # Eagle counts windows: 8 tokens are 2 plain blocks but only 1 eagle window.
        error_case("eagle_mm_2_entries_1_window", "mm_hashes_too_long", tokens8, 4, eagle=True, mm_hashes=[[1], [2]]),
        error_case("eagle_mm_1_entry_0_windows", "mm_hashes_too_long", PUBLIC_TOKENS[:4], 4, eagle=True, mm_hashes=[None]),
        error_case("eagle_mm_1_entry_empty_prompt", "mm_hashes_too_long", [], 4, eagle=True, mm_hashes=[[1]]),
        error_case("mm_too_long_with_lora", "mm_hashes_too_long", tokens8, 4, lora_name="my-lora",
                   mm_hashes=[None, None, [1]]),
    ]
    return "Inputs every binding must reject with an error (and never a crash or a partial result).", cases


GROUPS = {
    "public": group_public,
    "boundaries": group_boundaries,
    "token_extremes": group_token_extremes,
    "lora": group_lora,
    "namespace": group_namespace,
    "lora_namespace": group_lora_namespace,
    "empty_names": group_empty_names,
    "multimodal": group_multimodal,
    "eagle": group_eagle,
    "long_chains": group_long_chains,
    "seeds": group_seeds,
    "chains": group_chains,
    "raw": group_raw,
    "errors": group_errors,
}


def dumps(value):
    # UTF-8 as is (not \u escapes) and no spaces: the smallest, plainest JSON.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def render(group, description, cases):
    """One group's file: a header line, one case per line, so that diffs point at a case."""
    names = [case["name"] for case in cases]
    if len(set(names)) != len(names):
        raise RuntimeError("duplicate case names in group %s" % group)
    header = '{"spec":%s,"group":%s,"description":%s,"cases":[' % (
        dumps(oracle.SPEC_VERSION), dumps(group), dumps(description))
    return header + "\n" + ",\n".join(dumps(case) for case in cases) + "\n]}\n"


def generate():
    """All groups as {file name: file text}, computed before anything is written."""
    check_public_literals()
    files = {}
    for group, build in GROUPS.items():
        description, cases = build()
        files[group + ".json"] = render(group, description, cases)
    return files


def write(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    for file_name, text in generate().items():
        with open(os.path.join(out_dir, file_name), "w", encoding="utf-8", newline="\n") as f:
            f.write(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="directory to write the <group>.json files into")
    write(parser.parse_args().out)


if __name__ == "__main__":
    main()
