"""Addresses of Python buffers, without copying.

The caller keeps the ``memoryview`` alive (and so the buffer exported, which
stops an ``array.array`` from being resized by another thread) for as long as
the address is in use.
"""

from __future__ import annotations

import array
import ctypes
from typing import Optional


class _PyBuffer(ctypes.Structure):
    # CPython's Py_buffer (stable since 3.3).
    _fields_ = [
        ("buf", ctypes.c_void_p),
        ("obj", ctypes.c_void_p),
        ("len", ctypes.c_ssize_t),
        ("itemsize", ctypes.c_ssize_t),
        ("readonly", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("format", ctypes.c_char_p),
        ("shape", ctypes.c_void_p),
        ("strides", ctypes.c_void_p),
        ("suboffsets", ctypes.c_void_p),
        ("internal", ctypes.c_void_p),
    ]


_get_buffer = ctypes.pythonapi.PyObject_GetBuffer
_get_buffer.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int]
_get_buffer.restype = ctypes.c_int
_release_buffer = ctypes.pythonapi.PyBuffer_Release
_release_buffer.argtypes = [ctypes.POINTER(_PyBuffer)]
_release_buffer.restype = None

_PyBUF_SIMPLE = 0


def address(mv: memoryview) -> Optional[int]:
    """The address of the first byte of a C-contiguous memoryview (None when
    it is empty: the ABI takes a NULL pointer with a zero length)."""
    nbytes = mv.nbytes
    if nbytes == 0:
        return None
    obj = mv.obj
    if type(obj) is array.array:
        # Fast path (~40 ns): a view that covers the whole array starts where
        # the array starts. Slices fall through to the general paths.
        start, length = obj.buffer_info()
        if length * obj.itemsize == nbytes:
            return start
    if not mv.readonly:
        return ctypes.addressof(ctypes.c_char.from_buffer(mv))
    # Read-only exporters (bytes, read-only numpy arrays): ask CPython for the
    # pointer. `mv` itself holds an export, so the memory outlives the call.
    view = _PyBuffer()
    if _get_buffer(mv, ctypes.byref(view), _PyBUF_SIMPLE) != 0:  # pragma: no cover
        raise BufferError("cannot get the address of the buffer")
    try:
        buf: Optional[int] = view.buf  # a c_void_p field reads as int or None
        return buf
    finally:
        _release_buffer(ctypes.byref(view))
