"""Lists of Python ints to and from packed C arrays (the list API's cost).

Two implementations with one behaviour: the optional C extension
``kvhash._speedups`` (several times faster: it reads ints' digits directly),
and the ``array`` module, used when the extension cannot be imported (not
built, another interpreter). Same results, same exception types and
messages; tests/test_speedups.py compares them.

The rules for an item of a list of u32 tokens or u64 hashes:

- an int (``bool`` and other subclasses included) is taken by value, with
  none of its methods called; any other object with ``__index__`` is
  converted with it (numpy integers); anything else is a TypeError
  ``"tokens[3] must be an int, not float"``;
- a value outside ``[0, 2**32)`` (tokens) or ``[0, 2**64)`` (hashes) is an
  OverflowError ``"tokens[3] must be in [0, 2**32), got -1"``;
- the first bad item wins; an exception raised by ``__index__`` propagates.

``KVHASH_SPEEDUPS``: unset, the extension bundled in the package (if it
imports); ``0``/``off``, the ``array`` fallback; a path, that extension file
(a failure to load it is an ImportError). ``kvhash.SPEEDUPS`` says which is
in use.
"""

from __future__ import annotations

import array
import importlib.util
import operator
import os
import sys
from typing import TYPE_CHECKING, Any, List, Optional, Tuple, Union, cast

if TYPE_CHECKING:
    from typing import Protocol

    from ._types import Buffer, U64Array

    class Speedups(Protocol):
        """What kvhash._speedups provides (its stub: _speedups.pyi)."""

        def pack_u32(self, values: Union[List[Any], Tuple[Any, ...]], what: str, /) -> bytearray: ...

        def pack_u64(self, values: Union[List[Any], Tuple[Any, ...]], what: str, /) -> bytearray: ...

        def u64_list(self, buffer: Buffer, /) -> List[int]: ...


# Ints longer than this are described by their size in messages: their text
# is long, and str() refuses beyond 4300 digits. Same as PRINTABLE_BITS in
# _speedups.c.
_PRINTABLE_BITS = 128

_OFF = ("0", "off", "false", "no")


def _load() -> Tuple[Optional[Speedups], str]:
    """The extension to use and, when there is none, why."""
    choice = os.environ.get("KVHASH_SPEEDUPS", "").strip()
    if choice.lower() in _OFF:
        return None, "disabled by KVHASH_SPEEDUPS=%s" % choice
    if choice:
        # An explicit path is a request: failing to load it is an error.
        spec = importlib.util.spec_from_file_location("kvhash._speedups", choice)
        if not os.path.isfile(choice) or spec is None or spec.loader is None:
            raise ImportError(
                "kvhash: KVHASH_SPEEDUPS=%r is not an extension module file (unset it to use the bundled "
                "extension, or set it to 0 to use none)" % choice
            )
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[spec.name] = module
        return cast("Speedups", module), ""
    if importlib.util.find_spec("kvhash._speedups") is None:
        return None, "not built into this installation"
    try:
        from . import _speedups
    except ImportError as e:  # built for another interpreter, say
        return None, "cannot be imported: %s" % e
    return _speedups, ""


#: The extension in use, or None (the array fallback). Tests swap it.
speedups, unavailable_reason = _load()


def range_error(what: str, value: int, bits: int) -> OverflowError:
    """The OverflowError for `value` (an exact int) outside [0, 2**bits)."""
    n = int.bit_length(value)
    if n <= _PRINTABLE_BITS:
        got = "%d" % value
    else:
        got = "%s int of %d bits" % ("a negative" if value < 0 else "an", n)
    return OverflowError("%s must be in [0, 2**%d), got %s" % (what, bits, got))


def _item_error(values: Union[List[Any], Tuple[Any, ...]], bits: int, what: str) -> Optional[Exception]:
    """The error for the first bad item of `values`, by the rules above (the
    fallback's slow path: the array module has found one, with its own
    wording)."""
    limit = 1 << bits
    for i, v in enumerate(values):
        t = type(v)
        if issubclass(t, int):
            # int's own __index__: the value, whatever the subclass overrides.
            x = int.__index__(v)
        elif hasattr(t, "__index__"):
            x = operator.index(v)
        else:
            return TypeError("%s[%d] must be an int, not %s" % (what, i, t.__name__))
        if not 0 <= x < limit:
            return range_error("%s[%d]" % (what, i), x, bits)
    return None


def _pack_fallback(values: Union[List[Any], Tuple[Any, ...]], code: str, bits: int, what: str) -> memoryview:
    try:
        if type(values) is list:
            # One C-level pass; faster than the array() constructor.
            arr = array.array(code)
            arr.fromlist(values)
        else:
            arr = array.array(code, values)
    except (TypeError, OverflowError):
        err = _item_error(values, bits, what)
        if err is None:  # pragma: no cover - an __index__ that failed once only
            raise
        raise err from None
    return memoryview(arr)


def pack_u32(values: Union[List[Any], Tuple[Any, ...]], what: str) -> memoryview:
    """A list or tuple of ints as a 1-D view of packed uint32 (format 'I')."""
    c = speedups
    if c is not None:
        return memoryview(c.pack_u32(values, what)).cast("I")
    return _pack_fallback(values, "I", 32, what)


def pack_u64(values: Union[List[Any], Tuple[Any, ...]], what: str) -> memoryview:
    """A list or tuple of ints as a 1-D view of packed uint64 (format 'Q')."""
    c = speedups
    if c is not None:
        return memoryview(c.pack_u64(values, what)).cast("Q")
    return _pack_fallback(values, "Q", 64, what)


def u64_list(values: U64Array) -> List[int]:
    """An output array (array('Q') or numpy uint64) as a list of ints."""
    c = speedups
    if c is not None and type(values) is array.array:
        return c.u64_list(values)
    result: List[int] = values.tolist()
    return result
