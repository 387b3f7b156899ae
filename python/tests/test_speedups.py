"""The C extension kvhash._speedups against the array fallback of
kvhash._ints: the same packed bytes, lists and exceptions (type and message)
for any input, no leaked references, and the switches that choose it."""

from __future__ import annotations

import array
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import EXPECT_SPEEDUPS, SPEEDUPS_SO, SRC, require_speedups
from hypothesis import given
from hypothesis import strategies as st

import kvhash
from kvhash import _ints


# Taken before any test swaps it (the conversion fixture).
SPEEDUPS = _ints.speedups


@pytest.fixture(scope="module")
def c():
    """The extension module (the test fails when the run expects it and it
    is missing)."""
    require_speedups(SPEEDUPS, _ints.unavailable_reason)
    return SPEEDUPS


def test_speedups_in_use_when_expected():
    assert kvhash.SPEEDUPS is (SPEEDUPS is not None)
    if EXPECT_SPEEDUPS:
        assert kvhash.SPEEDUPS, _ints.unavailable_reason
        assert os.environ.get("KVHASH_SPEEDUPS"), "make sets KVHASH_SPEEDUPS to the built extension"
        assert os.path.samefile(sys.modules["kvhash._speedups"].__file__, os.environ["KVHASH_SPEEDUPS"])


# -- inputs -----------------------------------------------------------------


class SubInt(int):
    """An int subclass whose methods all lie: only its value may be used."""

    def __index__(self):
        return 7

    def __int__(self):
        return 7

    def __str__(self):
        return "lies"

    __repr__ = __str__

    def __lt__(self, other):
        return True

    def __le__(self, other):
        return True

    def __ge__(self, other):
        return True

    def bit_length(self):
        return 0


class Index:
    """Not an int, but has __index__ (like numpy integers)."""

    def __init__(self, value):
        self.value = value

    def __index__(self):
        return self.value


class IndexFails:
    def __index__(self):
        raise ValueError("no index today")


class IndexNotInt:
    def __index__(self):
        return "7"


class NoIndex:
    """Has __int__ but no __index__: not an int for our purposes."""

    def __int__(self):
        return 3


EDGES = [
    0, 1, 2**15, 2**30 - 1, 2**30, 2**31, 2**32 - 1, 2**32, 2**32 + 1, 2**60 - 1, 2**60, 2**63, 2**64 - 1,
    2**64, 2**64 + 1, 2**90, 2**128 - 1, 2**128, 2**129, 2**5000, 2**20000,
    -1, -2, -(2**30), -(2**31), -(2**32), -(2**63), -(2**64), -(2**128), -(2**129), -(2**20000),
]  # fmt: skip
INTS = st.one_of(
    st.integers(0, 2**32 - 1),
    st.integers(0, 2**64 - 1),
    st.integers(-(2**70), 2**70),
    st.sampled_from(EDGES),
    st.tuples(st.sampled_from(EDGES), st.integers(-3, 3)).map(sum),
)
GOOD_U32 = st.integers(0, 2**32 - 1)
ITEMS = st.one_of(
    INTS,
    INTS.map(SubInt),
    INTS.map(Index),
    st.booleans(),
    st.integers(0, 2**64 - 1).map(np.uint64),
    st.integers(-(2**63), 2**63 - 1).map(np.int64),
    st.integers(0, 2**32 - 1).map(np.uint32),
    st.floats(),
    st.sampled_from([None, "1", b"1", 1.0, 1j, np.float64(2.0), [1], NoIndex(), IndexFails(), IndexNotInt()]),
)


def outcome(fn, *args):
    """What a call did: ("ok", result) or ("raised", type, message)."""
    try:
        return ("ok", fn(*args))
    except Exception as e:  # noqa: BLE001 - the exception is the result
        return ("raised", type(e), str(e))


def c_pack(c, values, bits, what):
    fn = c.pack_u32 if bits == 32 else c.pack_u64
    return bytes(fn(values, what))


def py_pack(values, bits, what):
    return _ints._pack_fallback(values, "I" if bits == 32 else "Q", bits, what).tobytes()


def agree(c, values, bits, what="tokens"):
    got = outcome(c_pack, c, values, bits, what)
    want = outcome(py_pack, values, bits, what)
    assert got == want
    return got


# -- the two paths agree ------------------------------------------------------


@given(st.lists(ITEMS, max_size=40), st.sampled_from([32, 64]), st.booleans())
def test_pack_agrees_with_fallback_on_any_items(c, items, bits, as_tuple):
    agree(c, tuple(items) if as_tuple else items, bits)


@given(st.lists(GOOD_U32, max_size=300), st.lists(ITEMS, max_size=3), st.sampled_from([32, 64]))
def test_pack_agrees_with_fallback_on_mostly_good_lists(c, good, tail, bits):
    # The first bad item wins, wherever it is.
    agree(c, good + tail + good, bits, what="block_hashes")


@given(st.lists(st.integers(0, 2**32 - 1), max_size=300))
def test_pack_u32_of_valid_tokens_is_array_I(c, tokens):
    assert agree(c, tokens, 32) == ("ok", array.array("I", tokens).tobytes())


@given(st.lists(st.integers(0, 2**64 - 1), max_size=300))
def test_pack_u64_of_valid_hashes_is_array_Q(c, hashes):
    assert agree(c, hashes, 64) == ("ok", array.array("Q", hashes).tobytes())


@pytest.mark.parametrize(
    "item, bits, exc, message",
    [
        (2**32, 32, OverflowError, "tokens[1] must be in [0, 2**32), got 4294967296"),
        (-1, 32, OverflowError, "tokens[1] must be in [0, 2**32), got -1"),
        (2**64, 64, OverflowError, "tokens[1] must be in [0, 2**64), got 18446744073709551616"),
        (SubInt(-5), 64, OverflowError, "tokens[1] must be in [0, 2**64), got -5"),
        (Index(2**32), 32, OverflowError, "tokens[1] must be in [0, 2**32), got 4294967296"),
        (2**200, 64, OverflowError, "tokens[1] must be in [0, 2**64), got an int of 201 bits"),
        (-(2**200), 64, OverflowError, "tokens[1] must be in [0, 2**64), got a negative int of 201 bits"),
        (1.5, 32, TypeError, "tokens[1] must be an int, not float"),
        (None, 64, TypeError, "tokens[1] must be an int, not NoneType"),
        (np.float64(1), 32, TypeError, "tokens[1] must be an int, not float64"),
        (NoIndex(), 32, TypeError, "tokens[1] must be an int, not NoIndex"),
        (IndexFails(), 32, ValueError, "no index today"),
        (IndexNotInt(), 32, TypeError, "__index__ returned non-int (type str)"),
    ],
)
def test_bad_item_messages(c, item, bits, exc, message):
    assert agree(c, [0, item, "never reached"], bits) == ("raised", exc, message)


def test_accepted_items_are_taken_by_value(c):
    items = [True, False, SubInt(9), Index(2**32 - 1), np.uint32(5), np.int64(6), np.uint64(2**32 - 2)]
    assert agree(c, items, 32) == ("ok", array.array("I", [1, 0, 9, 2**32 - 1, 5, 6, 2**32 - 2]).tobytes())


def test_huge_lists_agree(c):
    rng = np.random.default_rng(7)
    for high, bits in ((128256, 32), (2**32, 32), (2**64, 64)):
        values = rng.integers(0, high, size=1 << 20, dtype=np.uint64).tolist()
        assert agree(c, values, bits)[0] == "ok"
        values[-1] = -1
        assert agree(c, values, bits) == (
            "raised", OverflowError, "tokens[1048575] must be in [0, 2**%d), got -1" % bits
        )  # fmt: skip


def test_empty_inputs(c):
    assert agree(c, [], 32) == agree(c, (), 64) == ("ok", b"")
    assert c.u64_list(array.array("Q")) == []


class Shrinker:
    """An item whose __index__ empties the list being converted."""

    def __init__(self, victim):
        self.victim = victim

    def __index__(self):
        self.victim.clear()
        return 1


class Grower:
    def __init__(self, victim):
        self.victim = victim

    def __index__(self):
        self.victim.extend(range(1000))  # reallocates the list's items
        return 1


@pytest.mark.parametrize("kind", [Shrinker, Grower])
def test_list_changed_by_index_is_a_runtime_error(c, kind):
    results = []
    for convert in (lambda v: c_pack(c, v, 32, "tokens"), lambda v: py_pack(v, 32, "tokens")):
        values = [1, 2, 3]
        values.insert(1, kind(values))
        results.append(outcome(convert, values))
    assert results[0] == results[1] == ("raised", RuntimeError, "list changed size during iteration")


def test_arguments_of_the_extension_are_checked(c):
    with pytest.raises(TypeError):
        c.pack_u32([1])
    with pytest.raises(TypeError):
        c.pack_u32([1], "tokens", 3)
    with pytest.raises(TypeError, match="list or a tuple"):
        c.pack_u32(iter([1]), "tokens")
    with pytest.raises(TypeError, match="list or a tuple"):
        c.pack_u64(type("L", (list,), {})([1]), "tokens")  # exact types only: _ints lists the rest
    with pytest.raises(TypeError, match="must be str"):
        c.pack_u64([1], b"tokens")
    for bad in (array.array("I", [1]), np.zeros((2, 2), dtype=np.uint64), np.arange(4, dtype=np.int64), b"12345678"):
        with pytest.raises(TypeError, match="unsigned 64-bit"):
            c.u64_list(bad)
    with pytest.raises(TypeError):
        c.u64_list([1, 2])
    with pytest.raises((TypeError, ValueError)):
        c.u64_list(np.arange(8, dtype=np.uint64)[::2])


@given(st.lists(st.integers(0, 2**64 - 1), max_size=300))
def test_u64_list_is_tolist(c, hashes):
    arr = array.array("Q", hashes)
    got = c.u64_list(arr)
    assert got == arr.tolist() == hashes
    assert all(type(h) is int for h in got)
    assert c.u64_list(np.asarray(hashes, dtype=np.uint64)) == hashes
    assert c.u64_list(memoryview(arr)) == hashes


def test_u64_list_reads_unaligned_buffers(c):
    raw = bytearray(1) + array.array("Q", [1, 2**64 - 1, 3]).tobytes()
    assert c.u64_list(memoryview(raw)[1:].cast("Q")) == [1, 2**64 - 1, 3]


# -- reference counts ---------------------------------------------------------


def test_no_reference_is_leaked_or_stolen(c):
    big = 2**40  # a fresh object, not a cached small int
    huge = 2**300
    idx = Index(big)
    tokens = [big, idx, 5]
    before = (sys.getrefcount(big), sys.getrefcount(idx), sys.getrefcount(tokens), sys.getrefcount(huge))
    for _ in range(100):
        c.pack_u64(tokens, "tokens")
        for bad in ([big, idx, huge], [idx, None], [Index(huge)], [IndexFails()], [-big]):
            with pytest.raises((OverflowError, TypeError, ValueError)):
                c.pack_u64(bad, "tokens")
        with pytest.raises(OverflowError):
            c.pack_u32(tokens, "tokens")
    assert (sys.getrefcount(big), sys.getrefcount(idx), sys.getrefcount(tokens), sys.getrefcount(huge)) == before


def test_u64_list_releases_the_buffer(c):
    arr = array.array("Q", [1, 2, 3])
    before = sys.getrefcount(arr)
    for _ in range(100):
        c.u64_list(arr)
        with pytest.raises(TypeError):
            c.u64_list(array.array("I", [1]))
    assert sys.getrefcount(arr) == before
    arr.append(4)  # BufferError if an export were still held
    assert c.u64_list(arr) == [1, 2, 3, 4]


# -- the switch -----------------------------------------------------------------


def _import_kvhash(env_speedups):
    env = dict(os.environ, PYTHONPATH=str(SRC))
    env.pop("KVHASH_SPEEDUPS", None)
    if env_speedups is not None:
        env["KVHASH_SPEEDUPS"] = env_speedups
    code = "import kvhash, kvhash._ints as i; print(kvhash.SPEEDUPS, i.unavailable_reason, sep='|')"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)


def test_source_tree_has_no_built_extension():
    # python/src holds sources only: imported from there without
    # KVHASH_SPEEDUPS, the package falls back.
    res = _import_kvhash(None)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "False|not built into this installation"


@pytest.mark.parametrize("value", ["0", "off", "OFF", "false", "no"])
def test_speedups_can_be_switched_off(value):
    res = _import_kvhash(value)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "False|disabled by KVHASH_SPEEDUPS=%s" % value


def test_a_named_extension_that_cannot_load_is_an_import_error(tmp_path):
    for path in ("/nonexistent/_speedups.so", str(tmp_path)):
        res = _import_kvhash(path)
        assert res.returncode != 0
        assert "ImportError" in res.stderr and "KVHASH_SPEEDUPS" in res.stderr and path in res.stderr
    broken = tmp_path / "_speedups.so"
    broken.write_bytes(b"not an ELF file")
    res = _import_kvhash(str(broken))
    assert res.returncode != 0 and "ImportError" in res.stderr


def test_a_named_extension_is_loaded(c):
    res = _import_kvhash(str(SPEEDUPS_SO))
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "True|"


# -- through the public API ---------------------------------------------------


@pytest.mark.usefixtures("conversion")
@given(st.lists(ITEMS, max_size=20))
def test_public_api_errors_name_the_item(kv, items):
    # Whichever path converts, the hashing functions raise the item's error
    # (the fixture runs this once with each).
    want = outcome(py_pack, items, 32, "tokens")
    got = outcome(kv.compute_block_hash_for_seq, items, 1)
    if want[0] == "raised":
        assert got == want
    else:
        assert got[0] == "ok" and len(got[1]) == len(items)
    want = outcome(py_pack, items, 64, "block_hashes")
    got = outcome(kv.compute_seq_hash_for_block, items)
    assert got[0] == want[0] and (got[0] == "ok" or got == want)


@pytest.mark.usefixtures("conversion")
def test_mm_hash_errors_name_block_and_item(kv):
    with pytest.raises(TypeError, match=r"^mm_hashes\[1\]\[0\] must be an int, not float$"):
        kv.block_hashes(list(range(8)), 4, mm_hashes=[None, [1.5]])
    with pytest.raises(OverflowError, match=r"^mm_hashes\[0\]\[1\] must be in \[0, 2\*\*64\), got -1$"):
        kv.block_hashes(list(range(8)), 4, mm_hashes=[(1, -1)])
    # Any iterable entry (a numpy array, a generator) is read like a list.
    want = kv.block_hashes(list(range(8)), 4, mm_hashes=[[1, 2], [3]]).tolist()
    got = kv.block_hashes(list(range(8)), 4, mm_hashes=[np.array([1, 2], dtype=np.uint64), (h for h in [3])])
    assert got.tolist() == want


@pytest.mark.usefixtures("conversion")
def test_iterables_are_converted_like_lists(kv):
    want = kv.block_hashes(list(range(8)), 4).tolist()
    assert kv.block_hashes(tuple(range(8)), 4).tolist() == want
    assert kv.block_hashes(range(8), 4).tolist() == want
    assert kv.block_hashes((t for t in range(8)), 4).tolist() == want
    with pytest.raises(TypeError, match=r"^tokens\[2\] must be an int, not str$"):
        kv.block_hashes(iter([1, 2, "3"]), 1)
    with pytest.raises(OverflowError, match=r"^sequence\[0\] must be in \[0, 2\*\*64\), got -5$"):
        kv.RadixTree().find_matches((-5,))
