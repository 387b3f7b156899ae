"""Random inputs through both backends, compared with the independent oracle
(conformance/oracle/kvhash_oracle.py)."""

from __future__ import annotations

import array

import kvhash_oracle as oracle
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

# Every list of ints here is converted by the C extension, then by the
# array fallback (conftest.conversion).
pytestmark = pytest.mark.usefixtures("conversion")

U32 = st.integers(0, 2**32 - 1)
U64 = st.integers(0, 2**64 - 1)
NAMES = st.one_of(st.none(), st.just(""), st.text(max_size=12))


@st.composite
def prompts(draw):
    block_size = draw(st.integers(1, 40))
    tokens = draw(st.lists(U32, max_size=block_size * 6 + 3))
    eagle = draw(st.booleans())
    n = len(tokens)
    count = ((n - 1) // block_size if n else 0) if eagle else n // block_size
    mm = draw(
        st.one_of(
            st.none(),
            st.lists(st.one_of(st.none(), st.lists(U64, max_size=3)), max_size=count),
        )
    )
    return tokens, block_size, draw(NAMES), draw(NAMES), eagle, mm


@given(prompts())
def test_block_and_sequence_hashes_match_oracle(kv, p):
    tokens, block_size, lora, ns, eagle, mm = p
    want = oracle.block_hashes(tokens, block_size, lora_name=lora, cache_namespace=ns, eagle=eagle, mm_hashes=mm)
    got = kv.block_hashes(tokens, block_size, lora_name=lora, cache_namespace=ns, is_eagle=eagle, mm_hashes=mm)
    assert got.tolist() == want
    assert kv.sequence_hashes(got).tolist() == oracle.sequence_hashes(want)
    assert kv.block_count(len(tokens), block_size, is_eagle=eagle) == len(want)


@given(prompts())
def test_dynamo_api_matches_oracle(kv, p):
    tokens, block_size, lora, ns, eagle, mm = p
    infos = (
        None
        if mm is None
        else [None if e is None else {"mm_objects": [{"mm_hash": h, "offsets": [[0, 1]]} for h in e]} for e in mm]
    )
    want = oracle.block_hashes(tokens, block_size, lora_name=lora, cache_namespace=ns, eagle=eagle, mm_hashes=mm)
    assert (
        kv.compute_block_hash_for_seq(tokens, block_size, infos, lora_name=lora, is_eagle=eagle, cache_namespace=ns)
        == want
    )
    assert kv.compute_seq_hash_for_block(want) == oracle.sequence_hashes(want)


@given(st.lists(U32, max_size=200), st.integers(1, 33))
def test_every_buffer_kind_gives_the_same_hashes(kv, tokens, block_size):
    want = oracle.block_hashes(tokens, block_size)
    arr = array.array("I", tokens)
    npa = np.asarray(tokens, dtype=np.uint32)
    ro = memoryview(arr.tobytes()).cast("I")  # read-only buffer
    for buf in (tokens, tuple(tokens), arr, memoryview(arr), npa, ro, iter(tokens)):
        assert list(kv.block_hashes(buf, block_size)) == want
    # A slice of a larger buffer starts at its own offset.
    padded = array.array("I", [7, 7, 7]) + arr
    assert kv.block_hashes(memoryview(padded)[3:], block_size).tolist() == want
    assert kv.block_hashes(np.concatenate([[9, 9], npa]).astype(np.uint32)[2:], block_size).tolist() == want


@given(prompts())
def test_one_call_block_and_sequence_hashes_match_oracle(kv, p):
    tokens, block_size, lora, ns, eagle, mm = p
    want = oracle.block_hashes(tokens, block_size, lora_name=lora, cache_namespace=ns, eagle=eagle, mm_hashes=mm)
    local, seq = kv.block_and_sequence_hashes(
        np.asarray(tokens, dtype=np.uint32), block_size, lora_name=lora, cache_namespace=ns, is_eagle=eagle, mm_hashes=mm
    )
    assert local.tolist() == want
    assert seq.tolist() == oracle.sequence_hashes(want)


@given(st.binary(max_size=300))
def test_raw_hash_matches_oracle(kv, data):
    assert kv.raw_hash(data) == oracle.raw_hash(data)


@given(NAMES, NAMES)
def test_seed_matches_oracle(kv, lora, ns):
    assert kv.seed(lora, ns) == oracle.seed(lora, ns)


@given(U64, U64)
def test_chain_step_matches_oracle(kv, parent, local):
    assert kv.chain_step(parent, local) == oracle.chain_step(parent, local)


@settings(max_examples=30)
@given(st.lists(U64, max_size=64))
def test_sequence_hashes_of_arbitrary_locals(kv, local):
    want = oracle.sequence_hashes(local)
    assert kv.sequence_hashes(local).tolist() == want
    assert kv.sequence_hashes(np.asarray(local, dtype=np.uint64)).tolist() == want
    assert kv.compute_seq_hash_for_block(local) == want


def test_long_prompt_matches_oracle(kv):
    rng = np.random.default_rng(1)
    tokens = rng.integers(0, 2**32, size=16 * 2048 + 5, dtype=np.uint32)
    want = oracle.block_hashes(tokens.tolist(), 16)
    got = kv.block_hashes(tokens, 16)
    assert got.dtype == np.uint64 and got.tolist() == want
