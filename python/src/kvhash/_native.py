"""The native backend: ctypes over ``libkvhash.so`` (the C ABI).

``ctypes.CDLL`` releases the GIL for the duration of every foreign call, so
threads hash and query in parallel; the library is thread-safe and keeps its
last-error message per OS thread, which is the thread that made the call.

Loading: ``KVHASH_LIBRARY`` (a path) if set, else the library bundled in the
package (``kvhash/_lib/libkvhash.so``).

Importing this module loads the library and binds the public API to it, so
``kvhash._native.block_hashes`` etc. exist alongside ``kvhash.wasm.*``.
"""

from __future__ import annotations

import ctypes
import os
from ctypes import POINTER, c_char_p, c_int32, c_int64, c_size_t, c_uint32, c_uint64, c_void_p
from typing import Callable, NoReturn, Optional, Tuple

from . import _api
from ._backend import HashInput
from ._buffers import address
from ._errors import ERR_BUFFER_TOO_SMALL, OK, BufferTooSmall, error_for

LIBRARY_NAME = "libkvhash.so"

_p_size = POINTER(c_size_t)

# name: (restype, argtypes). Pointers to caller memory are c_void_p (an int
# address or None) so that any buffer can be passed without a copy.
_SIGNATURES = {
    "kvhash_version": (c_char_p, []),
    "kvhash_spec_version": (c_char_p, []),
    "kvhash_last_error": (c_size_t, [c_void_p, c_size_t]),
    "kvhash_seed": (c_uint64, [c_char_p, c_size_t, c_char_p, c_size_t]),
    "kvhash_raw_hash": (c_int32, [c_void_p, c_size_t, POINTER(c_uint64)]),
    "kvhash_chain_step": (c_uint64, [c_uint64, c_uint64]),
    "kvhash_block_count": (c_int32, [c_size_t, c_int64, c_int32, _p_size]),
    "kvhash_block_hashes": (
        c_int32,
        [
            c_void_p, c_size_t, c_int64,
            c_char_p, c_size_t, c_char_p, c_size_t,
            c_int32,
            c_void_p, c_void_p, c_size_t,
            c_void_p, c_size_t, _p_size,
        ],
    ),
    "kvhash_block_and_sequence_hashes": (
        c_int32,
        [
            c_void_p, c_size_t, c_int64,
            c_char_p, c_size_t, c_char_p, c_size_t,
            c_int32,
            c_void_p, c_void_p, c_size_t,
            c_void_p, c_void_p, c_size_t, _p_size,
        ],
    ),
    "kvhash_sequence_hashes": (c_int32, [c_void_p, c_size_t, c_void_p, c_size_t, _p_size]),
    "kvhash_index_new": (c_int32, [c_int32, POINTER(c_uint64)]),
    "kvhash_index_free": (c_int32, [c_uint64]),
    "kvhash_index_set_mode": (c_int32, [c_uint64, c_int32]),
    "kvhash_index_apply_json": (c_int32, [c_uint64, c_uint64, c_char_p, c_size_t]),
    "kvhash_index_apply_router_event_json": (c_int32, [c_uint64, c_char_p, c_size_t]),
    "kvhash_index_apply_stored": (
        c_int32,
        [c_uint64, c_uint64, c_uint32, c_uint64, c_int32, c_uint64, c_void_p, c_void_p, c_size_t],
    ),
    "kvhash_index_apply_removed": (
        c_int32,
        [c_uint64, c_uint64, c_uint32, c_uint64, c_void_p, c_size_t],
    ),
    "kvhash_index_clear_worker": (c_int32, [c_uint64, c_uint64, c_uint32]),
    "kvhash_index_clear_all_blocks": (c_int32, [c_uint64, c_uint64]),
    "kvhash_index_remove_worker": (c_int32, [c_uint64, c_uint64]),
    "kvhash_index_find_matches": (
        c_int32,
        [
            c_uint64, c_void_p, c_size_t, c_int32,
            c_void_p, c_void_p, c_void_p, c_void_p, c_size_t, _p_size,
        ],
    ),
    "kvhash_index_dump_jsonl": (c_int32, [c_uint64, c_void_p, c_size_t, _p_size]),
    "kvhash_index_stats_json": (c_int32, [c_uint64, c_void_p, c_size_t, _p_size]),
    "kvhash_index_workers": (c_int32, [c_uint64, c_void_p, c_void_p, c_size_t, _p_size]),
}


def library_path() -> str:
    """Where the shared library is loaded from (KVHASH_LIBRARY, else bundled)."""
    env = os.environ.get("KVHASH_LIBRARY")
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_lib", LIBRARY_NAME)


class NativeBackend:
    """The ABI over ctypes (see ``_backend.Backend``)."""

    name = "native"

    def __init__(self, path: Optional[str] = None) -> None:
        self.path = path or library_path()
        if not os.path.exists(self.path):
            raise ImportError(
                "kvhash: shared library not found at %r (set KVHASH_LIBRARY to the path of "
                "libkvhash.so, or install the kvhash wheel, which bundles it)" % self.path
            )
        # CDLL, not PyDLL: the GIL is released during every call.
        lib = ctypes.CDLL(self.path)
        for fname, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(lib, fname)
            fn.restype = restype
            fn.argtypes = argtypes
        self._lib = lib
        # Bound functions, looked up once (attribute access on CDLL is slow).
        # Typed here because ctypes types every foreign call as returning Any;
        # the restypes above make these ints.
        self._seed: Callable[..., int] = lib.kvhash_seed
        self._chain_step: Callable[..., int] = lib.kvhash_chain_step
        self._block_count: Callable[..., int] = lib.kvhash_block_count
        self._block_hashes: Callable[..., int] = lib.kvhash_block_hashes
        self._sequence_hashes: Callable[..., int] = lib.kvhash_sequence_hashes
        self._block_and_sequence_hashes: Callable[..., int] = lib.kvhash_block_and_sequence_hashes
        self._last_error: Callable[..., int] = lib.kvhash_last_error

    # -- errors -----------------------------------------------------------

    def _fail(self, status: int, out_len: Optional[c_size_t] = None) -> NoReturn:
        """Raise for a non-OK status. Called right after the failing call, on
        the same thread, so kvhash_last_error describes that call."""
        if status == ERR_BUFFER_TOO_SMALL and out_len is not None:
            raise BufferTooSmall(out_len.value)
        raise error_for(status, self.last_error())

    def last_error(self) -> str:
        buf = ctypes.create_string_buffer(512)
        n = self._last_error(buf, len(buf))
        if n >= len(buf):
            buf = ctypes.create_string_buffer(n + 1)
            n = self._last_error(buf, len(buf))
        return buf.raw[:n].decode("utf-8", "replace")

    # -- facts ------------------------------------------------------------

    def version(self) -> str:
        version: bytes = self._lib.kvhash_version()
        return version.decode("utf-8")

    def spec_version(self) -> str:
        spec: bytes = self._lib.kvhash_spec_version()
        return spec.decode("utf-8")

    # -- hashing ----------------------------------------------------------

    def seed(self, lora: bytes, namespace: bytes) -> int:
        return self._seed(lora, len(lora), namespace, len(namespace))

    def raw_hash(self, data: memoryview) -> int:
        out = c_uint64()
        status = self._lib.kvhash_raw_hash(address(data), data.nbytes, ctypes.byref(out))
        if status != OK:
            self._fail(status)
        return out.value

    def chain_step(self, parent_sequence_hash: int, local_hash: int) -> int:
        return self._chain_step(parent_sequence_hash, local_hash)

    def block_count(self, n_tokens: int, block_size: int, eagle: bool) -> int:
        out = c_size_t()
        status = self._block_count(n_tokens, block_size, 1 if eagle else 0, ctypes.byref(out))
        if status != OK:
            self._fail(status)
        return out.value

    def block_hashes(self, inputs: HashInput, out: memoryview) -> int:
        out_len = c_size_t()
        status = self._block_hashes(*_hash_inputs(inputs), address(out), len(out), ctypes.byref(out_len))
        if status != OK:
            self._fail(status, out_len)
        return out_len.value

    def block_and_sequence_hashes(self, inputs: HashInput, out_local: memoryview, out_sequence: memoryview) -> int:
        out_len = c_size_t()
        status = self._block_and_sequence_hashes(
            *_hash_inputs(inputs), address(out_local), address(out_sequence), len(out_local), ctypes.byref(out_len)
        )
        if status != OK:
            self._fail(status, out_len)
        return out_len.value

    def sequence_hashes(self, block_hashes: memoryview, out: memoryview) -> int:
        out_len = c_size_t()
        status = self._sequence_hashes(
            address(block_hashes), len(block_hashes), address(out), len(out), ctypes.byref(out_len)
        )
        if status != OK:
            self._fail(status, out_len)
        return out_len.value

    # -- index ------------------------------------------------------------

    def _check(self, status: int) -> None:
        if status != OK:
            self._fail(status)

    def index_new(self, mode: int) -> int:
        handle = c_uint64()
        self._check(self._lib.kvhash_index_new(mode, ctypes.byref(handle)))
        return handle.value

    def index_free(self, handle: int) -> None:
        self._check(self._lib.kvhash_index_free(handle))

    def index_set_mode(self, handle: int, mode: int) -> None:
        self._check(self._lib.kvhash_index_set_mode(handle, mode))

    def index_apply_json(self, handle: int, worker_id: int, data: bytes) -> None:
        self._check(self._lib.kvhash_index_apply_json(handle, worker_id, data, len(data)))

    def index_apply_router_event_json(self, handle: int, data: bytes) -> None:
        self._check(self._lib.kvhash_index_apply_router_event_json(handle, data, len(data)))

    def index_apply_stored(
        self,
        handle: int,
        worker_id: int,
        dp_rank: int,
        event_id: int,
        parent_hash: Optional[int],
        block_hashes: memoryview,
        tokens_hashes: memoryview,
    ) -> None:
        self._check(
            self._lib.kvhash_index_apply_stored(
                handle, worker_id, dp_rank, event_id,
                0 if parent_hash is None else 1, parent_hash or 0,
                address(block_hashes), address(tokens_hashes), len(block_hashes),
            )
        )

    def index_apply_removed(
        self, handle: int, worker_id: int, dp_rank: int, event_id: int, block_hashes: memoryview
    ) -> None:
        self._check(
            self._lib.kvhash_index_apply_removed(
                handle, worker_id, dp_rank, event_id, address(block_hashes), len(block_hashes)
            )
        )

    def index_clear_worker(self, handle: int, worker_id: int, dp_rank: int) -> None:
        self._check(self._lib.kvhash_index_clear_worker(handle, worker_id, dp_rank))

    def index_clear_all_blocks(self, handle: int, worker_id: int) -> None:
        self._check(self._lib.kvhash_index_clear_all_blocks(handle, worker_id))

    def index_remove_worker(self, handle: int, worker_id: int) -> None:
        self._check(self._lib.kvhash_index_remove_worker(handle, worker_id))

    def index_find_matches(
        self,
        handle: int,
        local_hashes: memoryview,
        early_exit: bool,
        worker_ids: memoryview,
        dp_ranks: memoryview,
        scores: memoryview,
        tree_sizes: memoryview,
    ) -> int:
        out_len = c_size_t()
        status = self._lib.kvhash_index_find_matches(
            handle, address(local_hashes), len(local_hashes), 1 if early_exit else 0,
            address(worker_ids), address(dp_ranks), address(scores), address(tree_sizes),
            len(worker_ids), ctypes.byref(out_len),
        )
        if status != OK:
            self._fail(status, out_len)
        return out_len.value

    def _bytes_out(self, fn: Callable[..., int], handle: int, out: memoryview) -> int:
        out_len = c_size_t()
        status = fn(handle, address(out), len(out), ctypes.byref(out_len))
        if status != OK:
            self._fail(status, out_len)
        return out_len.value

    def index_dump_jsonl(self, handle: int, out: memoryview) -> int:
        return self._bytes_out(self._lib.kvhash_index_dump_jsonl, handle, out)

    def index_stats_json(self, handle: int, out: memoryview) -> int:
        return self._bytes_out(self._lib.kvhash_index_stats_json, handle, out)

    def index_workers(self, handle: int, worker_ids: memoryview, dp_ranks: memoryview) -> int:
        out_len = c_size_t()
        status = self._lib.kvhash_index_workers(
            handle, address(worker_ids), address(dp_ranks), len(worker_ids), ctypes.byref(out_len)
        )
        if status != OK:
            self._fail(status, out_len)
        return out_len.value


backend = NativeBackend()
api = _api.API(backend)
globals().update(api.exports())
__all__ = list(api.exports())


def _hash_inputs(inputs: HashInput) -> Tuple[object, ...]:
    """The leading arguments every block-hashing export takes, in order."""
    tokens, lora, namespace = inputs.tokens, inputs.lora, inputs.namespace
    if inputs.mm_hashes is None or inputs.mm_counts is None:
        mm: Tuple[object, ...] = (None, None, 0)
    else:
        mm = (address(inputs.mm_hashes), address(inputs.mm_counts), len(inputs.mm_counts))
    return (
        address(tokens), len(tokens), inputs.block_size,
        lora, len(lora), namespace, len(namespace),
        1 if inputs.eagle else 0,
        *mm,
    )
