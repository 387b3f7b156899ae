"""kvhash._speedups: Python ints to and from packed C arrays (C extension,
python/src/kvhash/_speedups.c). Conversion only; used through kvhash._ints,
whose pure-Python fallback behaves identically."""

from typing import Any, List, Tuple, Union

from typing_extensions import Buffer

def pack_u32(values: Union[List[Any], Tuple[Any, ...]], what: str, /) -> bytearray:
    """`values` (an exact list or tuple) as packed native uint32; `what` names
    the argument in TypeError / OverflowError messages."""

def pack_u64(values: Union[List[Any], Tuple[Any, ...]], what: str, /) -> bytearray:
    """As pack_u32, for uint64 values."""

def u64_list(buffer: Buffer, /) -> List[int]:
    """A 1-D C-contiguous buffer of native uint64 as a list of ints."""
