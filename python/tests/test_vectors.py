"""Every spec-v1 conformance vector, through both backends and every API
shape (Dynamo's list functions and the buffer API)."""

from __future__ import annotations

import array

import numpy as np
import pytest
from conftest import BACKENDS, load_backend, load_vectors, vector_files

# Every list of ints here is converted by the C extension, then by the
# array fallback (conftest.conversion).
pytestmark = pytest.mark.usefixtures("conversion")

KINDS = {"block", "error", "seed", "chain", "raw"}


def _cases():
    for path in vector_files():
        doc = load_vectors(path)
        assert doc["spec"] == "v1" and doc["group"] == path.stem
        for case in doc["cases"]:
            assert case["kind"] in KINDS, "unknown vector kind %r in %s" % (case["kind"], path.name)
            yield pytest.param(case, id="%s/%s" % (path.stem, case["name"]))


CASES = list(_cases())


def _u64s(values):
    return [int(v) for v in values]


def _mm(options):
    mm = options["mm_hashes"]
    if mm is None:
        return None
    return [None if entry is None else _u64s(entry) for entry in mm]


def _block_mm_infos(mm):
    """The same multimodal data in Dynamo's block_mm_infos shape."""
    if mm is None:
        return None
    return [
        None if entry is None else {"mm_objects": [{"mm_hash": h, "offsets": [[0, 1]]} for h in entry]}
        for entry in mm
    ]


def _raw_as_tokens(case):
    """The raw bytes as one block of little-endian u32 tokens, when they are
    whole tokens: their block hash must be the raw hash too."""
    data = bytes.fromhex(case["bytes_hex"])
    if len(data) == 0 or len(data) % 4:
        return None
    tokens = array.array("I")
    tokens.frombytes(data)
    assert tokens.itemsize == 4
    return tokens


def test_every_file_has_cases():
    files = vector_files()
    assert len(files) >= 14
    assert len(CASES) > 300


def test_some_raw_cases_are_expressible():
    raw = [c.values[0] for c in CASES if c.values[0]["kind"] == "raw"]
    assert sum(_raw_as_tokens(c) is not None for c in raw) >= 5


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", CASES)
def test_vector(backend, case):
    kv = load_backend(backend)
    kind = case["kind"]
    if kind == "block":
        opts = case["options"]
        mm = _mm(opts)
        want_local = _u64s(case["block_hashes"])
        want_seq = _u64s(case["sequence_hashes"])
        got = kv.compute_block_hash_for_seq(
            case["tokens"],
            case["block_size"],
            block_mm_infos=_block_mm_infos(mm),
            lora_name=opts["lora_name"],
            is_eagle=opts["eagle"],
            cache_namespace=opts["cache_namespace"],
        )
        assert got == want_local
        assert kv.compute_seq_hash_for_block(got) == want_seq
        buf = kv.block_hashes(
            array.array("I", case["tokens"]),
            case["block_size"],
            lora_name=opts["lora_name"],
            cache_namespace=opts["cache_namespace"],
            is_eagle=opts["eagle"],
            mm_hashes=mm,
        )
        assert isinstance(buf, array.array) and buf.typecode == "Q"
        assert buf.tolist() == want_local
        seq = kv.sequence_hashes(buf)
        assert seq.tolist() == want_seq
        both = kv.block_and_sequence_hashes(
            case["tokens"],
            case["block_size"],
            lora_name=opts["lora_name"],
            cache_namespace=opts["cache_namespace"],
            is_eagle=opts["eagle"],
            mm_hashes=mm,
        )
        assert [both[0].tolist(), both[1].tolist()] == [want_local, want_seq]
        npout = kv.block_hashes(
            np.asarray(case["tokens"], dtype=np.uint32),
            case["block_size"],
            lora_name=opts["lora_name"],
            cache_namespace=opts["cache_namespace"],
            is_eagle=opts["eagle"],
            mm_hashes=mm,
        )
        assert isinstance(npout, np.ndarray) and npout.dtype == np.uint64
        assert npout.tolist() == want_local
        assert kv.seed(opts["lora_name"], opts["cache_namespace"]) == int(case["seed"])
        assert kv.block_count(len(case["tokens"]), case["block_size"], is_eagle=opts["eagle"]) == len(want_local)
    elif kind == "error":
        opts = case["options"]
        with pytest.raises(ValueError):
            kv.block_hashes(
                case["tokens"],
                case["block_size"],
                lora_name=opts["lora_name"],
                cache_namespace=opts["cache_namespace"],
                is_eagle=opts["eagle"],
                mm_hashes=_mm(opts),
            )
        with pytest.raises(ValueError):
            kv.block_and_sequence_hashes(
                np.asarray(case["tokens"], dtype=np.uint32),
                case["block_size"],
                lora_name=opts["lora_name"],
                cache_namespace=opts["cache_namespace"],
                is_eagle=opts["eagle"],
                mm_hashes=_mm(opts),
            )
        infos = _block_mm_infos(_mm(opts))
        dynamo_args = (case["tokens"], case["block_size"], infos, opts["lora_name"], opts["eagle"], opts["cache_namespace"])
        if case["error"] == "mm_hashes_too_long":
            # Dynamo's function ignores entries past the last full block
            # (its helpers pass one per started block): the hashes are those
            # of the entries that have a block.
            n = kv.block_count(len(case["tokens"]), case["block_size"], is_eagle=opts["eagle"])
            assert kv.compute_block_hash_for_seq(*dynamo_args) == kv.compute_block_hash_for_seq(
                case["tokens"], case["block_size"], infos[:n], opts["lora_name"], opts["eagle"], opts["cache_namespace"]
            )
        elif case["error"] == "block_size_negative":
            # Dynamo's block size is unsigned: a negative one is OverflowError.
            with pytest.raises(OverflowError):
                kv.compute_block_hash_for_seq(*dynamo_args)
        else:
            assert case["error"] == "block_size_zero"
            with pytest.raises(ValueError) as err:
                kv.compute_block_hash_for_seq(*dynamo_args)
            assert str(err.value) == "kv_block_size cannot be 0"
    elif kind == "seed":
        assert kv.seed(case["lora_name"], case["cache_namespace"]) == int(case["seed"])
        assert kv.seed(lora_name=case["lora_name"], cache_namespace=case["cache_namespace"]) == int(case["seed"])
    elif kind == "chain":
        local = _u64s(case["block_hashes"])
        want = _u64s(case["sequence_hashes"])
        assert kv.compute_seq_hash_for_block(local) == want
        assert kv.sequence_hashes(array.array("Q", local)).tolist() == want
        assert kv.sequence_hashes(np.asarray(local, dtype=np.uint64)).tolist() == want
        for i in range(1, len(local)):
            assert kv.chain_step(want[i - 1], local[i]) == want[i]
    elif kind == "raw":
        data = bytes.fromhex(case["bytes_hex"])
        assert kv.raw_hash(data) == int(case["hash"])
        assert kv.raw_hash(bytearray(data)) == int(case["hash"])
        # Whole u32 tokens hash the same as one block of them.
        tokens = _raw_as_tokens(case)
        if tokens is not None:
            assert kv.block_hashes(tokens, len(tokens)).tolist() == [int(case["hash"])]
    else:  # pragma: no cover - _cases() already refuses unknown kinds
        pytest.fail("unknown kind %r" % kind)


def kv_errors():
    import kvhash

    return kvhash
