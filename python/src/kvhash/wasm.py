"""The WASM backend: the kvhash WebAssembly module run by ``wasmtime``.

Same ABI as the shared library (see ``_backend.Backend``), with the WASM
conventions: pointers and ``size_t`` are u32 offsets into the module's linear
memory, ``uint64_t`` is an i64, and every pointer must lie inside a live
allocation made with the module's own ``kvhash_alloc``. This backend keeps one
scratch allocation, grown as needed, lays each call's inputs and outputs out
in it, and copies them in and out with ``ctypes.memmove`` (so the buffer API
copies here: linear memory is the only memory the module can read).

One module instance serves the process; calls are serialized by a lock
(the module is single-threaded). Loading: ``KVHASH_WASM`` (a path) if set,
else the module bundled in the package (``kvhash/_lib/kvhash.wasm``). The
compiled module is cached by wasmtime when its cache is available.

Importing this module instantiates the WASM module and binds the public API to
it: ``kvhash.wasm.block_hashes`` etc. ``KVHASH_BACKEND=wasm`` makes
``import kvhash`` re-export these.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

try:
    import wasmtime
except ModuleNotFoundError as _e:  # the optional dependency of the wasm backend
    if _e.name != "wasmtime":
        raise
    raise ModuleNotFoundError(
        "kvhash: the wasm backend (KVHASH_BACKEND=wasm, kvhash.wasm) needs the wasmtime package, which is not "
        "installed: pip install 'kvhash[wasm]' (or unset KVHASH_BACKEND to use the native backend)",
        name="wasmtime",
    ) from None

from . import _api
from ._backend import HashInput
from ._buffers import address
from ._errors import ERR_BUFFER_TOO_SMALL, ERR_INVALID_ARGUMENT, ERR_NO_MEMORY, OK, BufferTooSmall, error_for

MODULE_NAME = "kvhash.wasm"

_U64_MASK = (1 << 64) - 1
_ALIGN = 8
# The module's memory cap (wasm/budget.go): told through this WASI variable,
# in bytes; the module takes nothing below 64 MiB; wasm pages are 64 KiB.
_MEMORY_LIMIT_ENV = "KVHASH_WASM_MEMORY_LIMIT"
_MIN_MEMORY_LIMIT = 64 << 20
_PAGE = 1 << 16


def module_path() -> str:
    """Where the WASM module is loaded from (KVHASH_WASM, else bundled)."""
    env = os.environ.get("KVHASH_WASM")
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_lib", MODULE_NAME)


def _i64(v: int) -> int:
    """u64 -> the i64 with the same bits (wasm i64 parameters are signed)."""
    return v - (1 << 64) if v >= (1 << 63) else v


def _u64(v: int) -> int:
    return v & _U64_MASK


def _i32(v: int) -> int:
    """u32 -> the i32 with the same bits (wasm i32 parameters are signed)."""
    return v - (1 << 32) if v >= (1 << 31) else v


class _In:
    """An input segment: bytes-like data copied into the arena."""

    __slots__ = ("data", "nbytes")

    def __init__(self, data: Union[bytes, memoryview], nbytes: int) -> None:
        self.data = data
        self.nbytes = nbytes


class _Out:
    """An output segment of nbytes bytes, copied back into `dest` (a writable
    memoryview) after the call, or read as a scalar."""

    __slots__ = ("dest", "nbytes")

    def __init__(self, dest: Optional[memoryview], nbytes: int) -> None:
        self.dest = dest
        self.nbytes = nbytes


# One argument of _call: an input, an output, or None (a NULL pointer).
_Segment = Optional[Union[_In, _Out]]


def _address(view: memoryview) -> int:
    """The address of a segment's view. _call lays out only segments with
    bytes, and address() is None only for an empty view."""
    addr = address(view)
    assert addr is not None
    return addr


class WasmBackend:
    """The ABI over wasmtime (see ``_backend.Backend``)."""

    name = "wasm"

    def __init__(self, path: Optional[str] = None, memory_limit: Optional[int] = None) -> None:
        """`memory_limit`: cap the instance's linear memory at that many
        bytes (whole 64 KiB pages; the module raises anything below 64 MiB
        to that). The module is told the cap through its WASI environment
        (KVHASH_WASM_MEMORY_LIMIT, wasm/budget.go), so it refuses requests
        that would not fit with NoMemoryError instead of trapping. None:
        no cap here (the process's own KVHASH_WASM_MEMORY_LIMIT, if set,
        still reaches the module)."""
        self.path = path or module_path()
        if not os.path.exists(self.path):
            raise ImportError(
                "kvhash: WASM module not found at %r (set KVHASH_WASM to the path of kvhash.wasm, "
                "or install the kvhash wheel, which bundles it)" % self.path
            )
        config = wasmtime.Config()
        try:
            # Compiling a Go module takes seconds; wasmtime's cache makes the
            # next process start fast. Not having a cache is not an error.
            config.cache = True
        except Exception:  # pragma: no cover - depends on the host
            pass
        self._engine = wasmtime.Engine(config)
        self._module = wasmtime.Module.from_file(self._engine, self.path)
        self._store = wasmtime.Store(self._engine)
        env = dict(os.environ)
        if memory_limit is not None:
            limit = max(int(memory_limit), _MIN_MEMORY_LIMIT) // _PAGE * _PAGE
            # The store enforces the cap; the module, told of it, keeps its
            # heap within budget below it (a Go runtime that cannot grow
            # would abort, losing the instance).
            self._store.set_limits(memory_size=limit)
            env[_MEMORY_LIMIT_ENV] = str(limit)
        wasi = wasmtime.WasiConfig()
        # The module sees the process's environment (index mode from the
        # environment reads it) and reports Go runtime failures on stderr.
        wasi.env = list(env.items())
        wasi.inherit_stderr()
        self._store.set_wasi(wasi)
        linker = wasmtime.Linker(self._engine)
        linker.define_wasi()
        instance = linker.instantiate(self._store, self._module)
        exports = instance.exports(self._store)
        memory = exports["memory"]
        if not isinstance(memory, wasmtime.Memory):
            raise ImportError("kvhash: %r exports no linear memory named 'memory'" % self.path)
        self._memory = memory
        self._fn: Dict[str, wasmtime.Func] = {}
        for export in self._module.exports:
            if export.name.startswith("kvhash_") or export.name == "_initialize":
                fn = exports[export.name]
                if not isinstance(fn, wasmtime.Func):
                    raise ImportError("kvhash: export %r of %r is not a function" % (export.name, self.path))
                self._fn[export.name] = fn
        self._lock = threading.Lock()
        # Handles whose free was asked for while the lock was busy (a
        # RadixTree collected by the GC in the middle of a call on this very
        # thread must not wait for the lock it holds); freed by the next call.
        self._pending_frees: List[int] = []
        self._arena = 0
        self._arena_size = 0
        if "_initialize" in self._fn:
            self._fn["_initialize"](self._store)
        self._version = self._string_fact("kvhash_version")
        self._spec_version = self._string_fact("kvhash_spec_version")

    # -- locking ----------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with self._lock:
            self._drain_frees()
            yield

    def _drain_frees(self) -> None:
        while self._pending_frees:
            handle = self._pending_frees.pop()
            # The tree is gone; a failure here has no one to report to.
            self._fn["kvhash_index_free"](self._store, _i64(handle))

    # -- memory -----------------------------------------------------------

    def _base(self) -> int:
        # Re-read after every call: a call may grow (move) linear memory.
        return ctypes.addressof(self._memory.data_ptr(self._store).contents)

    def _reserve(self, nbytes: int) -> int:
        """The arena, at least nbytes long (lock held)."""
        if nbytes <= self._arena_size and self._arena:
            return self._arena
        size = max(4096, self._arena_size)
        while size < nbytes:
            size *= 2
        # The new arena first, then the old one freed: if the module refuses
        # (its memory budget is spent), the old arena is still there to read
        # the module's message into, and to serve the next smaller call.
        ptr: int = self._fn["kvhash_alloc"](self._store, size) & 0xFFFFFFFF
        if ptr == 0:
            raise error_for(ERR_NO_MEMORY, self._message_in_arena("kvhash_alloc(%d) failed" % size))
        if self._arena:
            self._fn["kvhash_free"](self._store, self._arena)
        self._arena = ptr
        self._arena_size = size
        return ptr

    def _message_in_arena(self, fallback: str) -> str:
        """The module's last error, read into the current arena without
        growing it (growing is what just failed); cut to the arena's size,
        or `fallback` without an arena."""
        if not self._arena:
            return fallback
        cap = self._arena_size
        n: int = self._fn["kvhash_last_error"](self._store, self._arena, cap)
        raw = ctypes.string_at(self._base() + self._arena, min(n, cap - 1)).split(b"\0", 1)[0]
        text = raw.decode("utf-8", "replace")
        return text or fallback

    def _call(
        self, fname: str, segments: Sequence[_Segment], args_of: Callable[[List[int]], Tuple[int, ...]]
    ) -> Tuple[int, List[int]]:
        """Lay `segments` (_In / _Out / None) out in the arena, call `fname`
        with args_of(pointers), copy array outputs back. Returns (status,
        scalars): the value of each scalar output segment (size_t / uint64
        outputs), 0 for the others. A status other than OK and
        BUFFER_TOO_SMALL raises, with the last error read under the lock."""
        with self._locked():
            offsets: List[int] = []
            total = 0
            for seg in segments:
                if seg is None or seg.nbytes == 0:
                    offsets.append(-1)
                else:
                    offsets.append(total)
                    total += (seg.nbytes + _ALIGN - 1) // _ALIGN * _ALIGN
            arena = self._reserve(total) if total else 0
            ptrs = [0 if off < 0 else arena + off for off in offsets]
            if total:
                base = self._base()
                for seg, ptr in zip(segments, ptrs):
                    if isinstance(seg, _In) and ptr:
                        data = seg.data
                        src = data if isinstance(data, bytes) else _address(data)
                        ctypes.memmove(base + ptr, src, seg.nbytes)
            status: int = self._fn[fname](self._store, *args_of(ptrs))
            if status != OK and status != ERR_BUFFER_TOO_SMALL:
                raise error_for(status, self._last_error_locked())
            if total and status == OK:
                base = self._base()
                for seg, ptr in zip(segments, ptrs):
                    if isinstance(seg, _Out) and ptr and seg.dest is not None:
                        ctypes.memmove(_address(seg.dest), base + ptr, seg.nbytes)
            scalars = [self._read_scalar(seg, ptr) for seg, ptr in zip(segments, ptrs)]
            return status, scalars

    def _read_scalar(self, seg: _Segment, ptr: int) -> int:
        # Output segments without a destination are size_t / uint64 outputs.
        if isinstance(seg, _Out) and seg.dest is None and ptr:
            base = self._base()
            if seg.nbytes == 4:
                return ctypes.c_uint32.from_address(base + ptr).value
            return ctypes.c_uint64.from_address(base + ptr).value
        return 0

    def _last_error_locked(self) -> str:
        fn = self._fn["kvhash_last_error"]
        cap = 1024
        while True:
            ptr = self._reserve(cap)
            n: int = fn(self._store, ptr, cap)
            if n < cap:
                base = self._base()
                return ctypes.string_at(base + ptr, n).decode("utf-8", "replace")
            cap = n + 1

    def _string_fact(self, fname: str) -> str:
        fn = self._fn[fname]
        with self._locked():
            ptr = self._reserve(256)
            n: int = fn(self._store, ptr, 256)
            if n >= 256:
                ptr = self._reserve(n + 1)
                n = fn(self._store, ptr, n + 1)
            return ctypes.string_at(self._base() + ptr, n).decode("utf-8")

    def last_error(self) -> str:
        with self._locked():
            return self._last_error_locked()

    # -- facts ------------------------------------------------------------

    def version(self) -> str:
        return self._version

    def spec_version(self) -> str:
        return self._spec_version

    # -- hashing ----------------------------------------------------------

    def seed(self, lora: bytes, namespace: bytes) -> int:
        # kvhash_seed returns the u64 itself, not a status.
        with self._locked():
            total = len(lora) + len(namespace)
            arena = self._reserve(total) if total else 0
            base = self._base()
            lora_ptr = arena if lora else 0
            ns_ptr = arena + len(lora) if namespace else 0
            if lora:
                ctypes.memmove(base + lora_ptr, lora, len(lora))
            if namespace:
                ctypes.memmove(base + ns_ptr, namespace, len(namespace))
            return _u64(self._fn["kvhash_seed"](self._store, lora_ptr, len(lora), ns_ptr, len(namespace)))

    def raw_hash(self, data: memoryview) -> int:
        _, scalars = self._call(
            "kvhash_raw_hash",
            [_In(data, data.nbytes), _Out(None, 8)],
            lambda p: (p[0], data.nbytes, p[1]),
        )
        return scalars[1]

    def chain_step(self, parent_sequence_hash: int, local_hash: int) -> int:
        with self._locked():
            return _u64(self._fn["kvhash_chain_step"](self._store, _i64(parent_sequence_hash), _i64(local_hash)))

    def block_count(self, n_tokens: int, block_size: int, eagle: bool) -> int:
        if n_tokens >= 1 << 32:
            # size_t is 32 bits in wasm32: no buffer there can hold so many tokens.
            raise error_for(ERR_INVALID_ARGUMENT, "n_tokens %d does not fit in the WASM module's size_t" % n_tokens)
        _, scalars = self._call(
            "kvhash_block_count",
            [_Out(None, 4)],
            lambda p: (_i32(n_tokens), block_size, 1 if eagle else 0, p[0]),
        )
        return scalars[0]

    def block_hashes(self, inputs: HashInput, out: memoryview) -> int:
        return self._hash_blocks("kvhash_block_hashes", inputs, [out])

    def block_and_sequence_hashes(self, inputs: HashInput, out_local: memoryview, out_sequence: memoryview) -> int:
        return self._hash_blocks("kvhash_block_and_sequence_hashes", inputs, [out_local, out_sequence])

    def _hash_blocks(self, fname: str, inputs: HashInput, outs: List[memoryview]) -> int:
        """Calls a block-hashing export: the inputs they share, then one or
        two output buffers of equal capacity, then out_len."""
        tokens, block_size, lora, namespace, eagle, mm_hashes, mm_counts = inputs
        n_tok = len(tokens)
        mm_blocks = 0 if mm_counts is None else len(mm_counts)
        cap = len(outs[0])
        segments: List[_Segment] = [
            _In(tokens, tokens.nbytes),
            _In(lora, len(lora)),
            _In(namespace, len(namespace)),
            None if mm_hashes is None else _In(mm_hashes, mm_hashes.nbytes),
            None if mm_counts is None else _In(mm_counts, mm_counts.nbytes),
            *(_Out(o, o.nbytes) for o in outs),
            _Out(None, 4),
        ]
        k = len(outs)
        status, scalars = self._call(
            fname,
            segments,
            lambda p: (
                p[0], n_tok, block_size,
                p[1], len(lora), p[2], len(namespace),
                1 if eagle else 0,
                p[3], p[4], mm_blocks,
                *p[5:5 + k], cap, p[5 + k],
            ),
        )
        if status == ERR_BUFFER_TOO_SMALL:
            raise BufferTooSmall(scalars[5 + k])
        return scalars[5 + k]

    def sequence_hashes(self, block_hashes: memoryview, out: memoryview) -> int:
        n = len(block_hashes)
        status, scalars = self._call(
            "kvhash_sequence_hashes",
            [_In(block_hashes, block_hashes.nbytes), _Out(out, out.nbytes), _Out(None, 4)],
            lambda p: (p[0], n, p[1], len(out), p[2]),
        )
        if status == ERR_BUFFER_TOO_SMALL:
            raise BufferTooSmall(scalars[2])
        return scalars[2]

    # -- index ------------------------------------------------------------

    def _simple(self, fname: str, *args: int) -> None:
        with self._locked():
            status: int = self._fn[fname](self._store, *args)
            if status != OK:
                raise error_for(status, self._last_error_locked())

    def index_new(self, mode: int) -> int:
        _, scalars = self._call("kvhash_index_new", [_Out(None, 8)], lambda p: (mode, p[0]))
        return scalars[0]

    def index_free(self, handle: int) -> None:
        # Never blocks: when the lock is busy (another thread's call, or this
        # thread's own call interrupted by the garbage collector), the free
        # is queued for the next call. Handles are never reused, so a late
        # free cannot hit another tree.
        if not self._lock.acquire(blocking=False):
            self._pending_frees.append(handle)
            return
        try:
            self._drain_frees()
            status: int = self._fn["kvhash_index_free"](self._store, _i64(handle))
            if status != OK:
                raise error_for(status, self._last_error_locked())
        finally:
            self._lock.release()

    def index_set_mode(self, handle: int, mode: int) -> None:
        self._simple("kvhash_index_set_mode", _i64(handle), mode)

    def index_apply_json(self, handle: int, worker_id: int, data: bytes) -> None:
        self._call(
            "kvhash_index_apply_json",
            [_In(data, len(data))],
            lambda p: (_i64(handle), _i64(worker_id), p[0], len(data)),
        )

    def index_apply_router_event_json(self, handle: int, data: bytes) -> None:
        self._call(
            "kvhash_index_apply_router_event_json",
            [_In(data, len(data))],
            lambda p: (_i64(handle), p[0], len(data)),
        )

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
        n = len(block_hashes)
        self._call(
            "kvhash_index_apply_stored",
            [_In(block_hashes, block_hashes.nbytes), _In(tokens_hashes, tokens_hashes.nbytes)],
            lambda p: (
                _i64(handle), _i64(worker_id), _i32(dp_rank), _i64(event_id),
                0 if parent_hash is None else 1, _i64(parent_hash or 0),
                p[0], p[1], n,
            ),
        )

    def index_apply_removed(
        self, handle: int, worker_id: int, dp_rank: int, event_id: int, block_hashes: memoryview
    ) -> None:
        n = len(block_hashes)
        self._call(
            "kvhash_index_apply_removed",
            [_In(block_hashes, block_hashes.nbytes)],
            lambda p: (_i64(handle), _i64(worker_id), _i32(dp_rank), _i64(event_id), p[0], n),
        )

    def index_clear_worker(self, handle: int, worker_id: int, dp_rank: int) -> None:
        self._simple("kvhash_index_clear_worker", _i64(handle), _i64(worker_id), _i32(dp_rank))

    def index_clear_all_blocks(self, handle: int, worker_id: int) -> None:
        self._simple("kvhash_index_clear_all_blocks", _i64(handle), _i64(worker_id))

    def index_remove_worker(self, handle: int, worker_id: int) -> None:
        self._simple("kvhash_index_remove_worker", _i64(handle), _i64(worker_id))

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
        n = len(local_hashes)
        cap = len(worker_ids)
        status, scalars = self._call(
            "kvhash_index_find_matches",
            [
                _In(local_hashes, local_hashes.nbytes),
                _Out(worker_ids, worker_ids.nbytes),
                _Out(dp_ranks, dp_ranks.nbytes),
                _Out(scores, scores.nbytes),
                _Out(tree_sizes, tree_sizes.nbytes),
                _Out(None, 4),
            ],
            lambda p: (_i64(handle), p[0], n, 1 if early_exit else 0, p[1], p[2], p[3], p[4], cap, p[5]),
        )
        if status == ERR_BUFFER_TOO_SMALL:
            raise BufferTooSmall(scalars[5])
        return scalars[5]

    def _bytes_out(self, fname: str, handle: int, out: memoryview) -> int:
        cap = len(out)
        status, scalars = self._call(
            fname,
            [_Out(out, out.nbytes), _Out(None, 4)],
            lambda p: (_i64(handle), p[0], cap, p[1]),
        )
        if status == ERR_BUFFER_TOO_SMALL:
            raise BufferTooSmall(scalars[1])
        return scalars[1]

    def index_dump_jsonl(self, handle: int, out: memoryview) -> int:
        return self._bytes_out("kvhash_index_dump_jsonl", handle, out)

    def index_stats_json(self, handle: int, out: memoryview) -> int:
        return self._bytes_out("kvhash_index_stats_json", handle, out)

    def index_workers(self, handle: int, worker_ids: memoryview, dp_ranks: memoryview) -> int:
        cap = len(worker_ids)
        status, scalars = self._call(
            "kvhash_index_workers",
            [_Out(worker_ids, worker_ids.nbytes), _Out(dp_ranks, dp_ranks.nbytes), _Out(None, 4)],
            lambda p: (_i64(handle), p[0], p[1], cap, p[2]),
        )
        if status == ERR_BUFFER_TOO_SMALL:
            raise BufferTooSmall(scalars[2])
        return scalars[2]


backend = WasmBackend()
api = _api.API(backend)
globals().update(api.exports())
__all__ = list(api.exports())
