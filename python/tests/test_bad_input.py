"""Bad input: Python type errors are TypeError, values outside the C types
are OverflowError/ValueError, library rejections are ValueError/RuntimeError
with the library's message, and nothing crashes."""

from __future__ import annotations

import array
import ctypes

import numpy as np
import pytest

import kvhash

# Every list of ints here is converted by the C extension, then by the
# array fallback (conftest.conversion).
pytestmark = pytest.mark.usefixtures("conversion")


@pytest.mark.parametrize(
    "tokens",
    ["abc", b"abcd", {1: 2}, None, 5, [1.0, 2.0], ["1"], [None], object()],
    ids=["str", "bytes", "dict", "none", "int", "floats", "strs", "nones", "object"],
)
def test_tokens_of_wrong_type(kv, tokens):
    with pytest.raises(TypeError):
        kv.block_hashes(tokens, 4)
    if isinstance(tokens, bytes):
        # Dynamo's function reads any integer buffer item by item, bytes
        # included (a byte a token): so does kvhash's (test_dynamo_oracle).
        assert kv.compute_block_hash_for_seq(tokens, 4) == kv.compute_block_hash_for_seq(list(tokens), 4)
        return
    with pytest.raises(TypeError):
        kv.compute_block_hash_for_seq(tokens, 4)


@pytest.mark.parametrize(
    "make",
    [
        set,
        frozenset,
        lambda v: dict.fromkeys(v).keys(),
        lambda v: dict(zip(v, v)).values(),
        lambda v: dict(zip(v, v)).items(),
        lambda v: dict(zip(v, v)),
    ],
    ids=["set", "frozenset", "dict-keys", "dict-values", "dict-items", "dict"],
)
def test_unordered_iterables_are_refused_everywhere(kv, make):
    # A set iterates in hash order, not in the order of the prompt: hashing
    # it would give wrong hashes that look right (issue 10, item 7).
    tokens = make([3, 1, 2, 4])
    with pytest.raises(TypeError, match="ordered"):
        kv.block_hashes(tokens, 2)
    with pytest.raises(TypeError, match="ordered"):
        kv.block_and_sequence_hashes(tokens, 2)
    with pytest.raises(TypeError, match="ordered"):
        kv.compute_block_hash_for_seq(tokens, 2)
    with pytest.raises(TypeError, match="ordered"):
        kv.sequence_hashes(tokens)
    with pytest.raises(TypeError, match="ordered"):
        kv.compute_seq_hash_for_block(tokens)
    with pytest.raises(TypeError, match="ordered"):
        kv.block_hashes([1, 2, 3, 4], 2, mm_hashes=[tokens])
    with pytest.raises(TypeError, match="ordered"):
        kv.block_hashes([1, 2, 3, 4], 2, mm_hashes=make([None, None]) if make is not set else {None})
    tree = kv.RadixTree()
    with pytest.raises(TypeError, match="ordered"):
        tree.find_matches(tokens)
    with pytest.raises(TypeError, match="ordered"):
        tree.apply_stored(1, tokens, [1, 2, 3, 4])
    with pytest.raises(TypeError, match="ordered"):
        tree.apply_removed(1, tokens)
    # Ordered iterables are still read in their order.
    assert kv.block_hashes(iter([3, 1, 2, 4]), 2).tolist() == kv.block_hashes([3, 1, 2, 4], 2).tolist()


@pytest.mark.parametrize("tokens", [[-1], [2**32], [1, 2, 3, 2**40], [-(2**70)]])
def test_tokens_out_of_range(kv, tokens):
    with pytest.raises((OverflowError, ValueError)):
        kv.block_hashes(tokens, 1)
    with pytest.raises((OverflowError, ValueError)):
        kv.compute_block_hash_for_seq(tokens, 1)


@pytest.mark.parametrize(
    "buf",
    [
        array.array("H", [1, 2, 3, 4]),
        array.array("Q", [1, 2, 3, 4]),
        array.array("B", [1, 2, 3, 4]),
        array.array("i", [1, 2, 3, 4]),
        array.array("f", [1, 2, 3, 4]),
        np.arange(8, dtype=np.int64),
        np.arange(8, dtype=np.uint16),
        np.arange(8, dtype=np.int32),
        np.arange(8, dtype=">u4"),
        bytearray(16),
        memoryview(bytes(16)),
    ],
    ids=["H", "Q", "B", "i", "f", "np-int64", "np-uint16", "np-int32", "np-big-endian", "bytearray", "bytes-view"],
)
def test_buffer_of_wrong_item_type(kv, buf):
    with pytest.raises(TypeError, match="unsigned 32-bit"):
        kv.block_hashes(buf, 4)


def test_non_contiguous_and_multidimensional_buffers(kv):
    with pytest.raises(TypeError, match="contiguous"):
        kv.block_hashes(np.arange(16, dtype=np.uint32)[::2], 4)
    with pytest.raises(TypeError, match="1-dimensional"):
        kv.block_hashes(np.zeros((2, 4), dtype=np.uint32), 4)


def test_sequence_hash_buffers_must_be_u64(kv):
    with pytest.raises(TypeError, match="unsigned 64-bit"):
        kv.sequence_hashes(array.array("I", [1, 2]))
    with pytest.raises(TypeError, match="unsigned 64-bit"):
        kv.sequence_hashes(np.arange(3, dtype=np.int64))
    with pytest.raises((OverflowError, ValueError)):
        kv.sequence_hashes([-1])
    with pytest.raises((OverflowError, ValueError)):
        kv.compute_seq_hash_for_block([2**64])


@pytest.mark.parametrize("block_size", [1.0, "4", None, True, [4]])
def test_block_size_of_wrong_type(kv, block_size):
    with pytest.raises(TypeError):
        kv.block_hashes([1, 2, 3, 4], block_size)


def test_block_size_out_of_range(kv):
    with pytest.raises(OverflowError):
        kv.block_hashes([1, 2], 2**63)
    # Negative and zero sizes reach the library, which rejects them.
    with pytest.raises(kvhash.InvalidArgumentError) as err:
        kv.block_hashes([1, 2], -3)
    assert err.value.status == -1 and err.value.message


def test_block_size_accepts_numpy_ints(kv):
    assert kv.block_hashes([1, 2, 3, 4], np.int64(2)).tolist() == kv.block_hashes([1, 2, 3, 4], 2).tolist()


@pytest.mark.parametrize("name", [b"lora", 5, ["x"]])
def test_names_of_wrong_type(kv, name):
    with pytest.raises(TypeError):
        kv.block_hashes([1, 2, 3, 4], 4, lora_name=name)
    with pytest.raises(TypeError):
        kv.seed(cache_namespace=name)


def test_name_that_is_not_utf8_encodable(kv):
    with pytest.raises(ValueError):
        kv.seed("\ud800")


@pytest.mark.parametrize(
    "mm",
    ["abc", 5, [5], ["ab"], [[1.5]], [{"mm_hash": 1}]],
    ids=["str", "int", "int-entry", "str-entry", "float-hash", "dict-entry"],
)
def test_mm_hashes_of_wrong_type(kv, mm):
    with pytest.raises(TypeError):
        kv.block_hashes(list(range(8)), 4, mm_hashes=mm)


def test_mm_hashes_out_of_range(kv):
    with pytest.raises((OverflowError, ValueError)):
        kv.block_hashes(list(range(8)), 4, mm_hashes=[[-1]])
    with pytest.raises((OverflowError, ValueError)):
        kv.block_hashes(list(range(8)), 4, mm_hashes=[[2**64]])


@pytest.mark.parametrize(
    "infos, exc",
    [
        ("x", TypeError),
        ([5], TypeError),
        ([{"objects": []}], ValueError),
        ([{"mm_objects": [5]}], TypeError),
        ([{"mm_objects": [{"hash": 1}]}], ValueError),
        ([{"mm_objects": [{"mm_hash": "1"}]}], TypeError),
    ],
)
def test_block_mm_infos_of_wrong_shape(kv, infos, exc):
    with pytest.raises(exc):
        kv.compute_block_hash_for_seq(list(range(8)), 4, block_mm_infos=infos)


def test_mm_hashes_longer_than_blocks_is_library_error(kv):
    with pytest.raises(kvhash.InvalidArgumentError) as err:
        kv.block_hashes(list(range(8)), 4, mm_hashes=[None, None, None])
    assert "3" in err.value.message


def test_chain_step_and_seed_arguments(kv):
    with pytest.raises(OverflowError):
        kv.chain_step(-1, 0)
    with pytest.raises(OverflowError):
        kv.chain_step(0, 2**64)
    with pytest.raises(TypeError):
        kv.chain_step(1.0, 0)
    with pytest.raises(OverflowError):
        kv.block_count(-1, 4)


def test_tree_argument_types(kv):
    tree = kv.RadixTree()
    with pytest.raises(TypeError):
        tree.apply_event(1, 12)
    with pytest.raises(TypeError):
        tree.apply_event("1", b"{}")
    with pytest.raises(OverflowError):
        tree.apply_event(-1, b"{}")
    with pytest.raises(OverflowError):
        tree.remove_worker(2**64)
    with pytest.raises(OverflowError):
        tree.find_matches([-5])
    with pytest.raises(TypeError):
        tree.find_matches("abc")
    with pytest.raises(TypeError, match="unsigned 64-bit"):
        tree.find_matches(array.array("I", [1]))
    with pytest.raises(OverflowError):
        tree.clear_worker(1, dp_rank=2**32)
    with pytest.raises(TypeError):
        kv.RadixTree(enforce="yes")


def test_bad_json_variants(kv):
    tree = kv.RadixTree()
    for bad in ('{"event_id": -1, "data": "cleared"}', '{"event_id": 1, "data": {"stored": {}}}', "nul\x00l"):
        with pytest.raises(ValueError):
            tree.apply_event(1, bad)
    with pytest.raises(ValueError):
        tree.apply_router_event(b'{"worker_id": "x"}')
    # str, bytearray and memoryview are accepted like bytes.
    tree.apply_event(1, '{"event_id": 1, "data": "cleared"}')
    tree.apply_event(1, bytearray(b'{"event_id": 2, "data": "cleared"}'))
    tree.apply_event(1, memoryview(b'{"event_id": 3, "data": "cleared"}'))


def test_errors_leave_the_library_usable(kv):
    for _ in range(3):
        with pytest.raises(ValueError):
            kv.block_hashes([1, 2, 3], 0)
    assert kv.block_hashes([1, 2, 3, 4], 4).tolist() == kv.compute_block_hash_for_seq([1, 2, 3, 4], 4)


def test_native_uses_cdll_so_the_gil_is_released():
    import kvhash._native as native

    lib = native.backend._lib
    assert isinstance(lib, ctypes.CDLL) and not isinstance(lib, ctypes.PyDLL)


def test_unknown_backend_name_is_an_import_error():
    import os
    import subprocess
    import sys

    from conftest import SRC

    env = dict(os.environ, KVHASH_BACKEND="cuda", PYTHONPATH=str(SRC))
    res = subprocess.run([sys.executable, "-c", "import kvhash"], env=env, capture_output=True, text=True)
    assert res.returncode != 0
    assert "ImportError" in res.stderr and "KVHASH_BACKEND" in res.stderr


def test_raw_hash_arguments(kv):
    with pytest.raises(TypeError):
        kv.raw_hash("test data")
    with pytest.raises(TypeError):
        kv.raw_hash(5)
    with pytest.raises(TypeError):
        kv.raw_hash([1, 2])
    with pytest.raises(TypeError, match="contiguous"):
        kv.raw_hash(np.arange(16, dtype=np.uint8)[::2])
    # Any contiguous buffer is read as its bytes.
    assert kv.raw_hash(np.frombuffer(b"test data", dtype=np.uint8)) == 13226331709069118873


def test_one_call_hashes_check_arguments_like_block_hashes(kv):
    with pytest.raises(TypeError, match="unsigned 32-bit"):
        kv.block_and_sequence_hashes(array.array("H", [1, 2]), 1)
    with pytest.raises(OverflowError):
        kv.block_and_sequence_hashes([-1], 1)
    with pytest.raises(kvhash.InvalidArgumentError):
        kv.block_and_sequence_hashes([1, 2, 3, 4], 2, mm_hashes=[None, None, None])


def test_messages_speak_of_the_callers_values_not_of_go(kv):
    # Issue 10, item 13: "does not fit in a Go int" said nothing a Python
    # caller could act on.
    for call in (
        lambda: kv.block_count(2**64 - 1, 4),
        lambda: kv.block_count(2**63, 4),
        lambda: kv.block_hashes([1, 2, 3, 4], -1),
    ):
        with pytest.raises(ValueError) as err:
            call()
        message = str(err.value)
        assert "Go" not in message and "int64" not in message, message
        assert any(ch.isdigit() for ch in message), message
