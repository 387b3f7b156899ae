"""Tests of the oracle itself and a drift guard for the committed vectors."""

import os
import struct
import sys

import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

HERE = os.path.dirname(os.path.abspath(__file__))
# Import the oracle as other tests do, whatever pytest's import mode.
sys.path.insert(0, HERE)

import generate  # noqa: E402
import kvhash_oracle as oracle  # noqa: E402

COMMITTED_DIR = os.path.join(HERE, "..", "vectors", oracle.SPEC_VERSION)
REGENERATE_HINT = (
    "the committed vectors in conformance/vectors/%s differ from what the oracle generates. "
    "Run `make vectors` and review the diff: spec %s vectors must never change, so a real "
    "change to the hashing belongs in a new spec version." % (oracle.SPEC_VERSION, oracle.SPEC_VERSION)
)

# No example database: every run stands alone and writes nothing into the checkout.
PROPERTIES = settings(database=None, deadline=None, max_examples=200)

tokens_st = st.lists(st.integers(0, 2**32 - 1), max_size=80)
block_size_st = st.integers(1, 9)
u64_st = st.integers(0, 2**64 - 1)
name_st = st.none() | st.text(max_size=8)


def test_public_literals():
    local = oracle.block_hashes(list(range(1, 13)), 4)
    assert local == [14643705804678351452, 16777012769546811212, 483935686894639516]
    assert oracle.sequence_hashes(local) == [14643705804678351452, 4945711292740353085, 12583592247330656132]
    assert oracle.raw_hash(b"test data") == 13226331709069118873


def test_generator_checks_public_literals(monkeypatch):
    monkeypatch.setattr(generate, "PUBLIC_LOCAL", [0, 0, 0])
    with pytest.raises(SystemExit, match="public reference vectors"):
        generate.generate()


def test_block_bytes_are_le_u32_tokens():
    tokens = [1, 2**32 - 1, 0x01020304, 7]
    assert oracle.block_hashes(tokens, 4) == [oracle.raw_hash(struct.pack("<4I", *tokens))]


def test_mm_hashes_are_appended_sorted_le_u64():
    tokens = [1, 2, 3, 4]
    expected = oracle.raw_hash(struct.pack("<4I2Q", *tokens, 5, 2**63))
    assert oracle.block_hashes(tokens, 4, mm_hashes=[[2**63, 5]]) == [expected]


def test_seed_terms():
    lora = xxhash.xxh3_64_intdigest(b"my-lora", seed=0)
    namespace = xxhash.xxh3_64_intdigest(b"tenant-a", seed=1)
    assert oracle.seed() == 1337
    assert oracle.seed("my-lora") == (1337 + lora) % 2**64
    assert oracle.seed(None, "tenant-a") == (1337 + namespace) % 2**64
    assert oracle.seed("my-lora", "tenant-a") == (1337 + lora + namespace) % 2**64
    assert oracle.seed("", "") == 1337


def test_chain_ignores_options():
    local = oracle.block_hashes(list(range(16)), 4, lora_name="my-lora", cache_namespace="tenant-a")
    assert oracle.sequence_hashes(local)[1] == oracle.raw_hash(struct.pack("<QQ", local[0], local[1]))


def test_eagle_window_counts():
    counts = [len(oracle.block_hashes(list(range(n)), 4, eagle=True)) for n in range(11)]
    assert counts == [0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"tokens": [1, 2], "block_size": 0},
        {"tokens": [1, 2], "block_size": -1},
        {"tokens": [-1], "block_size": 1},
        {"tokens": [2**32], "block_size": 1},
        {"tokens": [1, 2, 3, 4], "block_size": 4, "mm_hashes": [None, None]},
        {"tokens": [1, 2, 3, 4], "block_size": 4, "eagle": True, "mm_hashes": [None]},
        {"tokens": [1, 2, 3, 4], "block_size": 4, "mm_hashes": [[2**64]]},
        {"tokens": [1, 2, 3, 4], "block_size": 4, "mm_hashes": [[-1]]},
    ],
)
def test_invalid_input_raises(kwargs):
    with pytest.raises(ValueError):
        oracle.block_hashes(**kwargs)


def test_generation_is_deterministic(tmp_path):
    generate.write(str(tmp_path / "a"))
    generate.write(str(tmp_path / "b"))
    for name in os.listdir(tmp_path / "a"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_committed_vectors_match_generator(tmp_path):
    generate.write(str(tmp_path))
    committed = sorted(f for f in os.listdir(COMMITTED_DIR) if f.endswith(".json"))
    assert committed == sorted(os.listdir(tmp_path)), REGENERATE_HINT
    for name in committed:
        with open(os.path.join(COMMITTED_DIR, name), "rb") as f:
            assert f.read() == (tmp_path / name).read_bytes(), "%s: %s" % (name, REGENERATE_HINT)


@PROPERTIES
@given(tokens_st, block_size_st, st.integers(0, 10), name_st, name_st, st.booleans())
def test_prefix_property(tokens, block_size, k, lora, namespace, eagle):
    # Cutting the prompt at a block boundary keeps the hashes of the blocks before it.
    full = oracle.block_hashes(tokens, block_size, lora, namespace, eagle)
    prefix = oracle.block_hashes(tokens[: k * block_size], block_size, lora, namespace, eagle)
    assert full[: len(prefix)] == prefix
    assert oracle.sequence_hashes(full)[: len(prefix)] == oracle.sequence_hashes(prefix)


@PROPERTIES
@given(tokens_st, block_size_st, tokens_st)
def test_partial_tail_never_matters(tokens, block_size, tail):
    full_blocks = tokens[: len(tokens) // block_size * block_size]
    tail = tail[: block_size - 1]
    assert oracle.block_hashes(full_blocks + tail, block_size) == oracle.block_hashes(full_blocks, block_size)


@PROPERTIES
@given(st.lists(st.integers(0, 2**32 - 1), min_size=8, max_size=8), st.lists(u64_st, max_size=6), st.randoms())
def test_mm_hash_order_does_not_matter(tokens, mm, rnd):
    shuffled = list(mm)
    rnd.shuffle(shuffled)
    assert oracle.block_hashes(tokens, 4, mm_hashes=[None, mm]) == oracle.block_hashes(
        tokens, 4, mm_hashes=[None, shuffled]
    )


@PROPERTIES
@given(st.lists(u64_st, max_size=20))
def test_sequence_hashes_fold_chain_step(local):
    sequence = oracle.sequence_hashes(local)
    assert len(sequence) == len(local)
    assert sequence[:1] == local[:1]
    for i in range(1, len(local)):
        assert sequence[i] == oracle.chain_step(sequence[i - 1], local[i])
