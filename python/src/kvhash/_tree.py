"""The KV index: Dynamo's ``RadixTree`` and its ``OverlapScores`` result.

A RadixTree holds one index handle of the library; every method converts its
arguments, calls one backend primitive and converts the result back. Index
semantics (what is stored, what is a stability violation, what is rejected)
are the library's.
"""

from __future__ import annotations

import array
import json
import weakref
from typing import TYPE_CHECKING, Any, Callable, Dict, List, NoReturn, Optional, Tuple, Type, cast

from ._backend import Backend
from ._convert import to_bool, to_json_bytes, to_u32, to_u64, u64_view
from ._errors import BufferTooSmall, InternalError
from ._output import grow_call

if TYPE_CHECKING:
    from ._types import IntArray, Worker

# Result buffers are made by repeating one zero item (the fastest way).
_ZERO_Q = array.array("Q", [0])
_ZERO_I = array.array("I", [0])

# Dynamo's mode numbers in the ABI: 0 = from the environment, 1 = warn, 2 = enforce.
_MODE_FROM_ENVIRONMENT = 0
_MODE_WARN = 1
_MODE_ENFORCE = 2


class OverlapScores:
    """The result of ``RadixTree.find_matches`` (Dynamo's ``OverlapScores``).

    - ``scores``: ``{(worker_id, dp_rank): matched prefix blocks}``
    - ``tree_sizes``: ``{(worker_id, dp_rank): blocks the worker holds}``
    - ``frequencies``: per matched depth, the access frequency (empty: see
      the docs on ``RadixTree(expiration_duration_secs=...)``)
    """

    __slots__ = ("scores", "tree_sizes", "frequencies")

    def __init__(
        self,
        scores: Dict[Worker, int],
        tree_sizes: Dict[Worker, int],
        frequencies: List[int],
    ) -> None:
        self.scores = scores
        self.tree_sizes = tree_sizes
        self.frequencies = frequencies

    def __repr__(self) -> str:
        return "OverlapScores(scores=%r, tree_sizes=%r, frequencies=%r)" % (
            self.scores,
            self.tree_sizes,
            self.frequencies,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OverlapScores):
            return NotImplemented
        return (self.scores, self.tree_sizes, self.frequencies) == (
            other.scores,
            other.tree_sizes,
            other.frequencies,
        )

    # Mutable and compared by value, so unhashable. The stubs type
    # object.__hash__ as a method, which None does not match.
    __hash__ = None  # type: ignore[assignment]


def _free_index(backend: Backend, handle: int) -> None:
    try:
        backend.index_free(handle)
    except Exception:  # pragma: no cover - nothing to report to at GC time
        pass


class RadixTree:
    """The KV-cache index (Dynamo's ``RadixTree``), backed by the library.

    ``expiration_duration_secs`` is accepted for compatibility with Dynamo
    and stored, but has no effect: the kvhash core has no per-block access
    frequency tracking, so ``OverlapScores.frequencies`` is always empty.

    ``enforce``: None (default) takes the mode from the environment
    (``KVHASH_ENFORCE_ENGINE_HASH_STABILITY`` or
    ``DYN_KV_ENFORCE_ENGINE_HASH_STABILITY`` set to 1/true means enforce,
    read by the library when it is loaded); True raises ``RuntimeError`` for
    every hash-stability violation and marks the worker unstable; False
    (warn) counts every violation and raises only for those that keep (part
    of) an event from being applied (unknown parent, unknown removed block,
    self-reference), as Dynamo's tree does.

    Thread-safe: any number of threads may call methods of one tree at once.
    ``close()`` frees the tree now (otherwise garbage collection does); it
    must not race with other calls on the same tree.
    """

    _backend: Backend  # set on the per-backend subclass made by bind_radix_tree

    def __init__(
        self,
        expiration_duration_secs: Optional[float] = None,
        *,
        enforce: Optional[bool] = None,
    ) -> None:
        if expiration_duration_secs is not None:
            if isinstance(expiration_duration_secs, bool) or not isinstance(expiration_duration_secs, (int, float)):
                raise TypeError(
                    "expiration_duration_secs must be a number or None, not %s"
                    % type(expiration_duration_secs).__name__
                )
            expiration_duration_secs = float(expiration_duration_secs)
        self.expiration_duration_secs = expiration_duration_secs
        mode = _MODE_FROM_ENVIRONMENT if enforce is None else (_MODE_ENFORCE if to_bool(enforce, "enforce") else _MODE_WARN)
        self._handle: Optional[int] = None
        handle = self._backend.index_new(mode)
        self._handle = handle
        self._match_capacity = 8
        self._text_capacity = 4096
        self._finalizer = weakref.finalize(self, _free_index, self._backend, handle)
        # The stubs declare atexit as a plain attribute of a class with empty
        # __slots__; at run time it is a property with a setter.
        self._finalizer.atexit = False  # type: ignore[misc]

    def _h(self) -> int:
        handle = self._handle
        if handle is None:
            raise RuntimeError("RadixTree is closed")
        return handle

    # -- lifetime

    def close(self) -> None:
        """Free the tree in the library. Later calls raise RuntimeError."""
        if self._handle is not None:
            self._handle = None
            self._finalizer()

    @property
    def closed(self) -> bool:
        return self._handle is None

    def __enter__(self) -> "RadixTree":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- no copies: a tree is its native handle

    # A pickle or copy of the object would carry the handle number, not the
    # index: the copy would use a tree freed with the original, and a pickle
    # loaded by another process would read whatever tree has that number
    # there. Dynamo's RadixTree refuses both with TypeError; so does this one,
    # on the way out (dumps, copy, deepcopy) and on the way in (a pickle
    # written by an older kvhash). To move an index, move its contents:
    # dump_tree_as_events() and apply_router_event().

    def _refuse_copy(self, *args: object) -> NoReturn:
        raise TypeError(
            "cannot pickle or copy 'kvhash.RadixTree' object: it is a handle to a native index; "
            "copy its contents instead (dump_tree_as_events, then apply_router_event on a new tree)"
        )

    __reduce_ex__ = _refuse_copy
    __reduce__ = _refuse_copy
    __copy__ = _refuse_copy
    __deepcopy__ = _refuse_copy
    __setstate__ = _refuse_copy

    # -- Dynamo's methods

    def find_matches(self, sequence: IntArray, early_exit: bool = False) -> OverlapScores:
        """Score every worker by how many leading blocks of `sequence` (local
        block hashes, u64) it holds."""
        # The view exports the caller's buffer (an array('Q') cannot be
        # resized while it exists): released on every path, also when a
        # later check fails and the caller keeps the exception (whose
        # traceback would keep this frame, and so the view, alive).
        with u64_view(sequence, "sequence") as local:
            early = to_bool(early_exit, "early_exit")
            n, ids, ranks, scores, sizes = self._find_matches(local, early)
        score_map: Dict[Worker, int] = {}
        size_map: Dict[Worker, int] = {}
        for i in range(n):
            key = (ids[i], ranks[i])
            score_map[key] = scores[i]
            size_map[key] = sizes[i]
        return OverlapScores(score_map, size_map, [])

    def _find_matches(
        self, local: memoryview, early: bool
    ) -> Tuple[int, "array.array[int]", "array.array[int]", "array.array[int]", "array.array[int]"]:
        """One library query into result arrays grown until they fit."""
        backend = self._backend
        handle = self._h()
        capacity = self._match_capacity
        while True:
            ids = _ZERO_Q * capacity
            ranks = _ZERO_I * capacity
            scores = _ZERO_I * capacity
            sizes = _ZERO_Q * capacity
            try:
                n = backend.index_find_matches(
                    handle, local, early,
                    memoryview(ids), memoryview(ranks), memoryview(scores), memoryview(sizes),
                )
            except BufferTooSmall as e:
                if e.needed <= capacity:
                    raise InternalError("find_matches: buffer too small for %d with %d" % (e.needed, capacity)) from None
                capacity = self._match_capacity = e.needed
                continue
            return n, ids, ranks, scores, sizes

    def apply_event(self, worker_id: int, kv_cache_event_bytes: bytes) -> None:
        """Apply one JSON ``KvCacheEvent`` from `worker_id`.

        Raises ValueError for malformed JSON, RuntimeError when the tree
        rejects the event (a stability violation in enforce mode)."""
        wid = to_u64(worker_id, "worker_id")
        data = to_json_bytes(kv_cache_event_bytes, "kv_cache_event_bytes")
        self._backend.index_apply_json(self._h(), wid, data)

    def remove_worker(self, worker_id: int) -> None:
        """Every dp_rank of `worker_id` leaves the tree."""
        self._backend.index_remove_worker(self._h(), to_u64(worker_id, "worker_id"))

    def clear_all_blocks(self, worker_id: int) -> None:
        """Drop every block of every dp_rank of `worker_id`; the worker stays known."""
        self._backend.index_clear_all_blocks(self._h(), to_u64(worker_id, "worker_id"))

    def dump_tree_as_events(self) -> List[str]:
        """The tree as JSON router events, one string each; replaying them
        (``apply_router_event``) into an empty tree rebuilds it."""
        text = self._text(self._backend.index_dump_jsonl)
        return [line for line in text.split("\n") if line]

    # -- kvhash additions

    def apply_router_event(self, router_event_bytes: bytes) -> None:
        """Apply one JSON router event ``{"worker_id", "storage_tier", "event"}``
        (the form ``dump_tree_as_events`` returns)."""
        data = to_json_bytes(router_event_bytes, "router_event_bytes")
        self._backend.index_apply_router_event_json(self._h(), data)

    def apply_stored(
        self,
        worker_id: int,
        block_hashes: IntArray,
        tokens_hashes: IntArray,
        *,
        parent_hash: Optional[int] = None,
        event_id: int = 0,
        dp_rank: int = 0,
    ) -> None:
        """A "stored" event without JSON: `block_hashes` are the engine's
        external hashes, `tokens_hashes` the canonical local hashes, one each
        a block (equal lengths); `parent_hash` None means the root."""
        wid = to_u64(worker_id, "worker_id")
        rank = to_u32(dp_rank, "dp_rank")
        eid = to_u64(event_id, "event_id")
        parent = None if parent_hash is None else to_u64(parent_hash, "parent_hash")
        # Both views released on every path (see find_matches), also when
        # the second argument is the bad one.
        with u64_view(block_hashes, "block_hashes") as ext, u64_view(tokens_hashes, "tokens_hashes") as loc:
            if len(ext) != len(loc):
                raise ValueError(
                    "block_hashes and tokens_hashes must have the same length (%d != %d)" % (len(ext), len(loc))
                )
            self._backend.index_apply_stored(self._h(), wid, rank, eid, parent, ext, loc)

    def apply_removed(
        self, worker_id: int, block_hashes: IntArray, *, event_id: int = 0, dp_rank: int = 0
    ) -> None:
        """A "removed" event without JSON (external block hashes)."""
        wid = to_u64(worker_id, "worker_id")
        rank = to_u32(dp_rank, "dp_rank")
        eid = to_u64(event_id, "event_id")
        with u64_view(block_hashes, "block_hashes") as ext:
            self._backend.index_apply_removed(self._h(), wid, rank, eid, ext)

    def clear_worker(self, worker_id: int, dp_rank: int = 0) -> None:
        """A "cleared" event: drop every block of one (worker_id, dp_rank)."""
        self._backend.index_clear_worker(self._h(), to_u64(worker_id, "worker_id"), to_u32(dp_rank, "dp_rank"))

    def workers(self) -> List[Worker]:
        """Every known (worker_id, dp_rank), sorted."""
        backend = self._backend
        handle = self._h()
        capacity = max(8, self._match_capacity)
        while True:
            ids = _ZERO_Q * capacity
            ranks = _ZERO_I * capacity
            try:
                n = backend.index_workers(handle, memoryview(ids), memoryview(ranks))
            except BufferTooSmall as e:
                if e.needed <= capacity:
                    raise InternalError("workers: buffer too small for %d with %d" % (e.needed, capacity)) from None
                capacity = e.needed
                continue
            return [(ids[i], ranks[i]) for i in range(n)]

    def stats(self) -> Dict[str, Any]:
        """The library's stats JSON, parsed (mode, nodes, per-worker blocks and
        stability-violation counters); see docs/api/python.md."""
        stats = json.loads(self._text(self._backend.index_stats_json))
        if not isinstance(stats, dict):
            raise InternalError("stats JSON is not an object: %r" % (stats,))
        return stats

    @property
    def enforce(self) -> bool:
        """True when stability violations reject events (from the library)."""
        return _mode_is_enforce(self.stats().get("mode"))

    @enforce.setter
    def enforce(self, value: bool) -> None:
        if not isinstance(value, bool):
            raise TypeError("enforce must be a bool, not %s" % type(value).__name__)
        self._backend.index_set_mode(self._h(), _MODE_ENFORCE if value else _MODE_WARN)

    def _text(self, fn: Callable[[int, memoryview], int]) -> str:
        handle = self._h()
        buf, n = grow_call(bytearray, lambda mv: fn(handle, mv), self._text_capacity)
        if len(buf) > self._text_capacity:
            self._text_capacity = len(buf)
        return bytes(memoryview(buf)[:n]).decode("utf-8")

    def __repr__(self) -> str:
        state = "closed" if self._handle is None else "handle=%d" % self._handle
        return "<kvhash.RadixTree %s backend=%s>" % (state, self._backend.name)


def _mode_is_enforce(mode: Any) -> bool:
    if isinstance(mode, str):
        return mode.lower() == "enforce"
    if isinstance(mode, int) and not isinstance(mode, bool):
        return mode == _MODE_ENFORCE
    raise InternalError("stats JSON has no usable 'mode': %r" % (mode,))


def bind_radix_tree(backend: Backend) -> Type[RadixTree]:
    """RadixTree over one backend: the class ``kvhash.RadixTree`` (or
    ``kvhash.wasm.RadixTree``) that users instantiate."""
    bound = type(
        "RadixTree",
        (RadixTree,),
        {"_backend": backend, "__module__": "kvhash", "__doc__": RadixTree.__doc__},
    )
    # type() is typed as returning a plain type; it is a RadixTree subclass.
    return cast("Type[RadixTree]", bound)
