"""Output buffers: allocating them, and growing them when the library asks.

The ABI writes into caller-owned arrays and answers BUFFER_TOO_SMALL with the
count it needs; the functions here hold that protocol, so the API layer only
says what to allocate and which primitive to call.
"""

from __future__ import annotations

import array
from typing import TYPE_CHECKING, Callable, List, Tuple, TypeVar, Union

from ._errors import BufferTooSmall, InternalError

if TYPE_CHECKING:
    from ._types import U64Array

_ZERO_Q = array.array("Q", [0])

# Any buffer the output functions allocate.
_Out = TypeVar("_Out", bound=Union["U64Array", bytearray])


def new_u64(n: int, like_numpy: bool) -> U64Array:
    """`n` u64 slots: a numpy array when the input was one, else array('Q')."""
    if like_numpy:
        import numpy as np

        return np.empty(n, dtype=np.uint64)
    return _ZERO_Q * n


def truncate(out: U64Array, n: int) -> U64Array:
    """The first `n` items of `out` (in place for array('Q'))."""
    if len(out) == n:
        return out
    if isinstance(out, array.array):
        del out[n:]
        return out
    return out[:n].copy()


def grow_call(alloc: Callable[[int], _Out], call: Callable[[memoryview], int], capacity: int) -> Tuple[_Out, int]:
    """Allocate `capacity` items, call; on BUFFER_TOO_SMALL reallocate to the
    count the library asked for and call again. Returns (buffer, count)."""
    outs, n = grow_call_outputs(alloc, lambda views: call(views[0]), capacity, 1)
    return outs[0], n


def grow_call_outputs(
    alloc: Callable[[int], _Out], call: Callable[[List[memoryview]], int], capacity: int, outputs: int
) -> Tuple[List[_Out], int]:
    """grow_call for exports that fill several outputs of one capacity."""
    while True:
        outs = [alloc(capacity) for _ in range(outputs)]
        # numpy arrays export the buffer protocol, but numpy's stubs declare
        # __buffer__ only from Python 3.12 on (so the ignore is unused there,
        # and where numpy is untyped).
        views = [memoryview(out) for out in outs]  # type: ignore[arg-type, unused-ignore]
        try:
            n = call(views)
        except BufferTooSmall as e:
            if e.needed <= capacity:
                raise InternalError(
                    "library reported a buffer too small for %d items with capacity %d" % (e.needed, capacity)
                ) from None
            capacity = e.needed
            continue
        finally:
            for view in views:
                view.release()
        if n > capacity:
            raise InternalError("library wrote %d items into a buffer of %d" % (n, capacity))
        return outs, n
