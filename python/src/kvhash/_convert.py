"""Argument conversion: Python values to the types of the ABI.

Python-level checks are about Python types only: a non-int where an int is
expected is a TypeError; an int outside its C type (u32 tokens, u64 hashes and
ids) is an OverflowError (what ``array('I', ...)`` and pyo3 raise); a buffer of
the wrong item size or layout is a TypeError. Lists of ints are packed by
``_ints`` (the C extension when available). Whether a value makes sense
(a zero block size, an unknown worker) is the library's decision.
"""

from __future__ import annotations

import array
import operator
import sys
from collections.abc import Set, ValuesView
from typing import Any, Iterable, Mapping, Optional, Sequence, Tuple

from ._ints import pack_u32, pack_u64, range_error

_U32_LIMIT = 1 << 32
_U64_LIMIT = 1 << 64
_I64_MIN = -(1 << 63)
_I64_LIMIT = 1 << 63

# The views handed to the backends are read as C uint32_t / uint64_t arrays.
if array.array("I").itemsize != 4 or array.array("Q").itemsize != 8:  # pragma: no cover
    raise ImportError("kvhash needs array('I') of 4 bytes and array('Q') of 8 bytes")

# Struct-module format characters accepted for unsigned arrays, by item size.
# numpy's uint64 exports 'L' on LP64 platforms, array('Q') exports 'Q'.
_UNSIGNED_CODES = {4: frozenset("IL"), 8: frozenset("QL")}
_NATIVE_PREFIXES = ("@", "=") + (("<",) if sys.byteorder == "little" else (">", "!"))


def to_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError("%s must be an int, not %s" % (what, type(value).__name__))
    return operator.index(value)


def to_u64(value: Any, what: str) -> int:
    v = to_int(value, what)
    if not 0 <= v < _U64_LIMIT:
        raise range_error(what, v, 64)
    return v


def to_u32(value: Any, what: str) -> int:
    v = to_int(value, what)
    if not 0 <= v < _U32_LIMIT:
        raise range_error(what, v, 32)
    return v


def to_i64(value: Any, what: str) -> int:
    v = to_int(value, what)
    if not _I64_MIN <= v < _I64_LIMIT:
        raise OverflowError("%s does not fit in a signed 64-bit integer: %d" % (what, v))
    return v


def to_name(value: Optional[str], what: str) -> bytes:
    if value is None:
        return b""
    if not isinstance(value, str):
        raise TypeError("%s must be a str or None, not %s" % (what, type(value).__name__))
    return value.encode("utf-8")


def to_bool(value: Any, what: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, (bool, int)):
        raise TypeError("%s must be a bool, not %s" % (what, type(value).__name__))
    return bool(value)


def to_json_bytes(value: Any, what: str) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    raise TypeError("%s must be bytes or str, not %s" % (what, type(value).__name__))


def is_numpy(obj: object) -> bool:
    """Whether `obj` is a numpy array, without importing numpy (an optional
    dependency: when it is not imported, nothing can be a numpy array)."""
    np = sys.modules.get("numpy")
    return np is not None and isinstance(obj, np.ndarray)


def _check_view(mv: memoryview, itemsize: int, what: str) -> memoryview:
    fmt = mv.format
    if fmt[:1] in _NATIVE_PREFIXES:
        fmt = fmt[1:]
    problem = None
    if mv.itemsize != itemsize or fmt not in _UNSIGNED_CODES[itemsize]:
        problem = "expected a buffer of unsigned %d-bit integers (format %r), got format %r, itemsize %d" % (
            itemsize * 8,
            "I" if itemsize == 4 else "Q",
            mv.format,
            mv.itemsize,
        )
    elif mv.ndim != 1:
        problem = "expected a 1-dimensional buffer, got %d dimensions" % mv.ndim
    elif not mv.c_contiguous:
        problem = "the buffer must be C-contiguous"
    if problem is not None:
        mv.release()
        raise TypeError("%s: %s" % (what, problem))
    return mv


# Iterables whose order is not the caller's: sets and frozensets iterate in
# hash order, and a dict or its views is a mapping, not a list of ints. Token
# order is the whole of a block hash, so hashing them would give an answer
# that looks right and is not.
_UNORDERED = (Set, ValuesView, Mapping)


def check_ordered(values: object, what: str) -> None:
    """TypeError unless `values` can be an ordered array argument."""
    if isinstance(values, _UNORDERED):
        raise TypeError(
            "%s must be an ordered sequence of ints (a list, tuple, array or iterator) or a buffer, not %s: "
            "its iteration order is not the order of the values" % (what, type(values).__name__)
        )


def _view(values: object, itemsize: int, what: str) -> memoryview:
    """A checked 1-D view of `values`: the caller's buffer itself when it has
    the buffer protocol (no copy), else its items packed (``_ints``: one
    C-level pass, TypeError for non-ints, OverflowError for out-of-range
    values, naming the item)."""
    if type(values) is not list and type(values) is not tuple:
        try:
            # A probe: memoryview raises TypeError for an object without the
            # buffer protocol, which is then read as an iterable of ints.
            # (Typed as object because only this call can tell: before
            # Python 3.12 no attribute does, and numpy's stubs declare
            # __buffer__ from 3.12 on.)
            mv = memoryview(values)  # type: ignore[arg-type]
        except TypeError:
            check_ordered(values, what)
            if isinstance(values, str) or not isinstance(values, Iterable):
                raise TypeError(
                    "%s must be a sequence of ints or a buffer, not %s" % (what, type(values).__name__)
                ) from None
            values = list(values)
        else:
            return _check_view(mv, itemsize, what)
    return pack_u32(values, what) if itemsize == 4 else pack_u64(values, what)


def u32_view(values: object, what: str) -> memoryview:
    """`values` (a u32 array argument) as a checked 1-D view of itemsize 4."""
    return _view(values, 4, what)


def u64_view(values: object, what: str) -> memoryview:
    """`values` (a u64 array argument) as a checked 1-D view of itemsize 8."""
    return _view(values, 8, what)


def mm_arrays(
    mm_hashes: Optional[Sequence[Optional[Iterable[int]]]],
) -> Tuple[Optional[memoryview], Optional[memoryview]]:
    """Per-block lists of mm hashes -> (concatenated u64 hashes, u32 counts),
    the ABI's flat form. None or an empty list means no media."""
    if mm_hashes is None:
        return None, None
    check_ordered(mm_hashes, "mm_hashes")
    if isinstance(mm_hashes, (str, bytes)) or not isinstance(mm_hashes, Iterable):
        raise TypeError("mm_hashes must be a list (one entry a block), not %s" % type(mm_hashes).__name__)
    flat = array.array("Q")
    counts = array.array("I")
    for i, entry in enumerate(mm_hashes):
        if entry is None:
            counts.append(0)
            continue
        check_ordered(entry, "mm_hashes[%d]" % i)
        if isinstance(entry, (str, bytes)) or not isinstance(entry, Iterable):
            raise TypeError("an mm_hashes entry must be None or a list of ints, not %s" % type(entry).__name__)
        items = entry if type(entry) is list or type(entry) is tuple else list(entry)
        with pack_u64(items, "mm_hashes[%d]" % i) as packed, packed.cast("B") as raw:
            flat.frombytes(raw)
            counts.append(len(packed))
    if not counts:
        return None, None
    return memoryview(flat), memoryview(counts)
