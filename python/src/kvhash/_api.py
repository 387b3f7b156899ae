"""The public API, written once over the backend interface (``_backend``).

Everything here converts Python values to the ABI's types, calls one backend
primitive, and converts the result back. Hashing, block counting, index
semantics and the decision of what is an error all live in the library (the
Go core behind the C ABI and the WASM module).

Python-level checks are about Python types only: a non-int where an int is
expected is a TypeError; an int outside its C type (u32 tokens, u64 hashes and
ids) is an OverflowError (what ``array('I', ...)`` and pyo3 raise); a buffer of
the wrong item size or layout is a TypeError.
"""

from __future__ import annotations

import array
import json
import operator
import sys
import weakref
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ._backend import Backend
from ._errors import BufferTooSmall, InternalError, InvalidArgumentError

_U32_LIMIT = 1 << 32
_U64_LIMIT = 1 << 64
_I64_MIN = -(1 << 63)
_I64_LIMIT = 1 << 63

if array.array("I").itemsize != 4 or array.array("Q").itemsize != 8:  # pragma: no cover
    raise ImportError("kvhash needs array('I') of 4 bytes and array('Q') of 8 bytes")

_ZERO_Q = array.array("Q", [0])
_ZERO_I = array.array("I", [0])

# Struct-module format characters accepted for unsigned arrays, by item size.
# numpy's uint64 exports 'L' on LP64 platforms, array('Q') exports 'Q'.
_UNSIGNED_CODES = {4: frozenset("IL"), 8: frozenset("QL")}
_NATIVE_PREFIXES = ("@", "=") + (("<",) if sys.byteorder == "little" else (">", "!"))

Tokens = Union[Sequence[int], "array.array[int]", memoryview, Any]
Worker = Tuple[int, int]

# Dynamo's mode numbers in the ABI: 0 = from the environment, 1 = warn, 2 = enforce.
_MODE_FROM_ENVIRONMENT = 0
_MODE_WARN = 1
_MODE_ENFORCE = 2


# -- argument conversion ---------------------------------------------------


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError("%s must be an int, not %s" % (what, type(value).__name__))
    return operator.index(value)


def _u64(value: Any, what: str) -> int:
    v = _int(value, what)
    if not 0 <= v < _U64_LIMIT:
        raise OverflowError("%s must be in [0, 2**64), got %d" % (what, v))
    return v


def _u32(value: Any, what: str) -> int:
    v = _int(value, what)
    if not 0 <= v < _U32_LIMIT:
        raise OverflowError("%s must be in [0, 2**32), got %d" % (what, v))
    return v


def _i64(value: Any, what: str) -> int:
    v = _int(value, what)
    if not _I64_MIN <= v < _I64_LIMIT:
        raise OverflowError("%s does not fit in a signed 64-bit integer: %d" % (what, v))
    return v


def _name(value: Optional[str], what: str) -> bytes:
    if value is None:
        return b""
    if not isinstance(value, str):
        raise TypeError("%s must be a str or None, not %s" % (what, type(value).__name__))
    return value.encode("utf-8")


def _bool(value: Any, what: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, (bool, int)):
        raise TypeError("%s must be a bool, not %s" % (what, type(value).__name__))
    return bool(value)


def _json_bytes(value: Any, what: str) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    raise TypeError("%s must be bytes or str, not %s" % (what, type(value).__name__))


def _is_numpy(obj: Any) -> bool:
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


def _view(values: Any, itemsize: int, what: str) -> memoryview:
    """A checked 1-D view of `values`: the caller's buffer itself when it has
    the buffer protocol (no copy), else one C-level pass into an array."""
    if type(values) is list:
        # The common case, converted in one C-level pass (a few ns a value;
        # fromlist is faster than the array() constructor): it raises
        # TypeError for non-ints and OverflowError for out-of-range values.
        arr = array.array("I" if itemsize == 4 else "Q")
        arr.fromlist(values)
        return memoryview(arr)
    try:
        mv = memoryview(values)
    except TypeError:
        if isinstance(values, (str, Mapping)) or not isinstance(values, Iterable):
            raise TypeError(
                "%s must be a sequence of ints or a buffer, not %s" % (what, type(values).__name__)
            ) from None
        return memoryview(array.array("I" if itemsize == 4 else "Q", values))
    return _check_view(mv, itemsize, what)


def _u32_view(values: Any, what: str) -> memoryview:
    return _view(values, 4, what)


def _u64_view(values: Any, what: str) -> memoryview:
    return _view(values, 8, what)


def _mm_arrays(mm_hashes: Optional[Sequence[Optional[Iterable[int]]]]):
    """Per-block lists of mm hashes -> (concatenated u64 hashes, u32 counts),
    the ABI's flat form. None or an empty list means no media."""
    if mm_hashes is None:
        return None, None
    if isinstance(mm_hashes, (str, bytes, Mapping)) or not isinstance(mm_hashes, Iterable):
        raise TypeError("mm_hashes must be a list (one entry a block), not %s" % type(mm_hashes).__name__)
    flat = array.array("Q")
    counts = array.array("I")
    for entry in mm_hashes:
        if entry is None:
            counts.append(0)
            continue
        if isinstance(entry, (str, bytes, Mapping)) or not isinstance(entry, Iterable):
            raise TypeError("an mm_hashes entry must be None or a list of ints, not %s" % type(entry).__name__)
        before = len(flat)
        flat.extend(entry)  # TypeError / OverflowError in C
        counts.append(len(flat) - before)
    if not counts:
        return None, None
    return memoryview(flat), memoryview(counts)


def _mm_from_block_infos(block_mm_infos: Any) -> Optional[List[Optional[List[int]]]]:
    """Dynamo's ``block_mm_infos`` (one entry a block: None or
    ``{"mm_objects": [{"mm_hash": int, ...}, ...]}``) -> per-block hash lists."""
    if block_mm_infos is None:
        return None
    if isinstance(block_mm_infos, (str, bytes, Mapping)) or not isinstance(block_mm_infos, Iterable):
        raise TypeError("block_mm_infos must be a list, not %s" % type(block_mm_infos).__name__)
    result: List[Optional[List[int]]] = []
    for i, info in enumerate(block_mm_infos):
        if info is None:
            result.append(None)
            continue
        if not isinstance(info, Mapping):
            raise TypeError("block_mm_infos[%d] must be None or a dict, not %s" % (i, type(info).__name__))
        if "mm_objects" not in info:
            raise ValueError("block_mm_infos[%d] has no 'mm_objects'" % i)
        objects = info["mm_objects"]
        if objects is None:
            result.append(None)
            continue
        hashes = []
        for j, obj in enumerate(objects):
            if not isinstance(obj, Mapping):
                raise TypeError(
                    "block_mm_infos[%d]['mm_objects'][%d] must be a dict, not %s" % (i, j, type(obj).__name__)
                )
            if "mm_hash" not in obj:
                raise ValueError("block_mm_infos[%d]['mm_objects'][%d] has no 'mm_hash'" % (i, j))
            hashes.append(obj["mm_hash"])
        result.append(hashes)
    return result


# -- output buffers ---------------------------------------------------------


def _new_u64(n: int, like_numpy: bool):
    if like_numpy:
        import numpy as np

        return np.empty(n, dtype=np.uint64)
    return _ZERO_Q * n


def _truncate(out, n: int):
    if len(out) == n:
        return out
    if isinstance(out, array.array):
        del out[n:]
        return out
    return out[:n].copy()


def _grow_call(alloc, call, capacity: int):
    """Allocate `capacity` items, call; on BUFFER_TOO_SMALL reallocate to the
    count the library asked for and call again. Returns (buffer, count)."""
    while True:
        out = alloc(capacity)
        mv = memoryview(out)
        try:
            n = call(mv)
        except BufferTooSmall as e:
            if e.needed <= capacity:
                raise InternalError(
                    "library reported a buffer too small for %d items with capacity %d" % (e.needed, capacity)
                ) from None
            capacity = e.needed
            continue
        finally:
            mv.release()
        if n > capacity:
            raise InternalError("library wrote %d items into a buffer of %d" % (n, capacity))
        return out, n


# -- results ----------------------------------------------------------------


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

    _backend: Backend  # set on the per-backend subclass made by API

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
        mode = _MODE_FROM_ENVIRONMENT if enforce is None else (_MODE_ENFORCE if _bool(enforce, "enforce") else _MODE_WARN)
        self._handle: Optional[int] = None
        handle = self._backend.index_new(mode)
        self._handle = handle
        self._match_capacity = 8
        self._text_capacity = 4096
        self._finalizer = weakref.finalize(self, _free_index, self._backend, handle)
        self._finalizer.atexit = False

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

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- Dynamo's methods

    def find_matches(self, sequence: Sequence[int], early_exit: bool = False) -> OverlapScores:
        """Score every worker by how many leading blocks of `sequence` (local
        block hashes, u64) it holds."""
        local = _u64_view(sequence, "sequence")
        early = _bool(early_exit, "early_exit")
        backend = self._backend
        handle = self._h()
        capacity = self._match_capacity
        try:
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
                break
        finally:
            local.release()
        score_map: Dict[Worker, int] = {}
        size_map: Dict[Worker, int] = {}
        for i in range(n):
            key = (ids[i], ranks[i])
            score_map[key] = scores[i]
            size_map[key] = sizes[i]
        return OverlapScores(score_map, size_map, [])

    def apply_event(self, worker_id: int, kv_cache_event_bytes: bytes) -> None:
        """Apply one JSON ``KvCacheEvent`` from `worker_id`.

        Raises ValueError for malformed JSON, RuntimeError when the tree
        rejects the event (a stability violation in enforce mode)."""
        wid = _u64(worker_id, "worker_id")
        data = _json_bytes(kv_cache_event_bytes, "kv_cache_event_bytes")
        self._backend.index_apply_json(self._h(), wid, data)

    def remove_worker(self, worker_id: int) -> None:
        """Every dp_rank of `worker_id` leaves the tree."""
        self._backend.index_remove_worker(self._h(), _u64(worker_id, "worker_id"))

    def clear_all_blocks(self, worker_id: int) -> None:
        """Drop every block of every dp_rank of `worker_id`; the worker stays known."""
        self._backend.index_clear_all_blocks(self._h(), _u64(worker_id, "worker_id"))

    def dump_tree_as_events(self) -> List[str]:
        """The tree as JSON router events, one string each; replaying them
        (``apply_router_event``) into an empty tree rebuilds it."""
        text = self._text(self._backend.index_dump_jsonl)
        return [line for line in text.split("\n") if line]

    # -- kvhash additions

    def apply_router_event(self, router_event_bytes: bytes) -> None:
        """Apply one JSON router event ``{"worker_id", "storage_tier", "event"}``
        (the form ``dump_tree_as_events`` returns)."""
        data = _json_bytes(router_event_bytes, "router_event_bytes")
        self._backend.index_apply_router_event_json(self._h(), data)

    def apply_stored(
        self,
        worker_id: int,
        block_hashes: Sequence[int],
        tokens_hashes: Sequence[int],
        *,
        parent_hash: Optional[int] = None,
        event_id: int = 0,
        dp_rank: int = 0,
    ) -> None:
        """A "stored" event without JSON: `block_hashes` are the engine's
        external hashes, `tokens_hashes` the canonical local hashes, one each
        a block (equal lengths); `parent_hash` None means the root."""
        wid = _u64(worker_id, "worker_id")
        rank = _u32(dp_rank, "dp_rank")
        eid = _u64(event_id, "event_id")
        parent = None if parent_hash is None else _u64(parent_hash, "parent_hash")
        ext = _u64_view(block_hashes, "block_hashes")
        loc = _u64_view(tokens_hashes, "tokens_hashes")
        try:
            if len(ext) != len(loc):
                raise ValueError(
                    "block_hashes and tokens_hashes must have the same length (%d != %d)" % (len(ext), len(loc))
                )
            self._backend.index_apply_stored(self._h(), wid, rank, eid, parent, ext, loc)
        finally:
            ext.release()
            loc.release()

    def apply_removed(
        self, worker_id: int, block_hashes: Sequence[int], *, event_id: int = 0, dp_rank: int = 0
    ) -> None:
        """A "removed" event without JSON (external block hashes)."""
        wid = _u64(worker_id, "worker_id")
        rank = _u32(dp_rank, "dp_rank")
        eid = _u64(event_id, "event_id")
        ext = _u64_view(block_hashes, "block_hashes")
        try:
            self._backend.index_apply_removed(self._h(), wid, rank, eid, ext)
        finally:
            ext.release()

    def clear_worker(self, worker_id: int, dp_rank: int = 0) -> None:
        """A "cleared" event: drop every block of one (worker_id, dp_rank)."""
        self._backend.index_clear_worker(self._h(), _u64(worker_id, "worker_id"), _u32(dp_rank, "dp_rank"))

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
        return json.loads(self._text(self._backend.index_stats_json))

    @property
    def enforce(self) -> bool:
        """True when stability violations reject events (from the library)."""
        return _mode_is_enforce(self.stats().get("mode"))

    @enforce.setter
    def enforce(self, value: bool) -> None:
        if not isinstance(value, bool):
            raise TypeError("enforce must be a bool, not %s" % type(value).__name__)
        self._backend.index_set_mode(self._h(), _MODE_ENFORCE if value else _MODE_WARN)

    def _text(self, fn) -> str:
        handle = self._h()
        buf, n = _grow_call(bytearray, lambda mv: fn(handle, mv), self._text_capacity)
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


# -- the bound API ------------------------------------------------------------


class API:
    """The public API bound to one backend. ``exports()`` are the names the
    ``kvhash`` package (and ``kvhash._native`` / ``kvhash.wasm``) expose."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.version = backend.version()
        self.spec_version = backend.spec_version()
        self.RadixTree = type(
            "RadixTree",
            (RadixTree,),
            {"_backend": backend, "__module__": "kvhash", "__doc__": RadixTree.__doc__},
        )

    # -- fast path

    def block_hashes(
        self,
        tokens: Tokens,
        block_size: int,
        *,
        lora_name: Optional[str] = None,
        cache_namespace: Optional[str] = None,
        is_eagle: bool = False,
        mm_hashes: Optional[Sequence[Optional[Sequence[int]]]] = None,
    ):
        """Canonical local block hashes of `tokens`, one per full block.

        `tokens`: any C-contiguous buffer of u32 (``array('I')``, numpy
        uint32, memoryview format 'I') used in place without a copy, or a list
        of ints. `mm_hashes`: one entry a block, None or a list of u64 media
        hashes. Returns ``array('Q')``, or a numpy uint64 array for a numpy
        input."""
        tok = _u32_view(tokens, "tokens")
        try:
            size = _i64(block_size, "block_size")
            lora = _name(lora_name, "lora_name")
            ns = _name(cache_namespace, "cache_namespace")
            eagle = _bool(is_eagle, "is_eagle")
            mm, counts = _mm_arrays(mm_hashes)
            backend = self.backend
            # A capacity hint only: the library reports the real count, and
            # asks for more room (BUFFER_TOO_SMALL) if the hint is short.
            hint = len(tok) // size if size > 0 else 0
            out, n = _grow_call(
                lambda cap: _new_u64(cap, _is_numpy(tokens)),
                lambda mv: backend.block_hashes(tok, size, lora, ns, eagle, mm, counts, mv),
                hint,
            )
        finally:
            tok.release()
        return _truncate(out, n)

    def block_and_sequence_hashes(
        self,
        tokens: Tokens,
        block_size: int,
        *,
        lora_name: Optional[str] = None,
        cache_namespace: Optional[str] = None,
        is_eagle: bool = False,
        mm_hashes: Optional[Sequence[Optional[Sequence[int]]]] = None,
    ):
        """``block_hashes`` and ``sequence_hashes`` in one library call (one
        pass over the tokens): returns ``(local, sequence)``, each
        ``array('Q')`` (numpy uint64 for a numpy input). Same arguments as
        ``block_hashes``."""
        tok = _u32_view(tokens, "tokens")
        try:
            size = _i64(block_size, "block_size")
            lora = _name(lora_name, "lora_name")
            ns = _name(cache_namespace, "cache_namespace")
            eagle = _bool(is_eagle, "is_eagle")
            mm, counts = _mm_arrays(mm_hashes)
            like_numpy = _is_numpy(tokens)
            backend = self.backend
            capacity = len(tok) // size if size > 0 else 0  # a hint, as in block_hashes
            while True:
                local = _new_u64(capacity, like_numpy)
                seq = _new_u64(capacity, like_numpy)
                lv, sv = memoryview(local), memoryview(seq)
                try:
                    n = backend.block_and_sequence_hashes(tok, size, lora, ns, eagle, mm, counts, lv, sv)
                except BufferTooSmall as e:
                    if e.needed <= capacity:
                        raise InternalError(
                            "library reported a buffer too small for %d items with capacity %d" % (e.needed, capacity)
                        ) from None
                    capacity = e.needed
                    continue
                finally:
                    lv.release()
                    sv.release()
                break
        finally:
            tok.release()
        return _truncate(local, n), _truncate(seq, n)

    def raw_hash(self, data: Any) -> int:
        """XXH3-64 with the spec seed (1337) of raw bytes: any C-contiguous
        buffer (bytes, bytearray, memoryview...), read as its bytes. For
        checking a build against the raw-bytes vectors; block hashes need no
        call to it."""
        if isinstance(data, str):
            raise TypeError("raw_hash takes bytes, not str (encode it first)")
        try:
            mv = memoryview(data)
        except TypeError:
            raise TypeError("raw_hash takes a bytes-like object, not %s" % type(data).__name__) from None
        if not mv.c_contiguous:
            mv.release()
            raise TypeError("raw_hash: the buffer must be C-contiguous")
        try:
            raw = mv.cast("B") if mv.format != "B" or mv.ndim != 1 else mv
            try:
                return self.backend.raw_hash(raw)
            finally:
                if raw is not mv:
                    raw.release()
        finally:
            mv.release()

    def sequence_hashes(self, block_hashes: Tokens):
        """The sequence-hash chain over local block hashes (u64 buffer or list).
        Returns ``array('Q')`` (numpy uint64 for a numpy input)."""
        loc = _u64_view(block_hashes, "block_hashes")
        try:
            backend = self.backend
            out, n = _grow_call(
                lambda cap: _new_u64(cap, _is_numpy(block_hashes)),
                lambda mv: backend.sequence_hashes(loc, mv),
                len(loc),
            )
        finally:
            loc.release()
        return _truncate(out, n)

    def block_count(self, n_tokens: int, block_size: int, *, is_eagle: bool = False) -> int:
        """How many block hashes a prompt of `n_tokens` tokens has."""
        n = _u64(n_tokens, "n_tokens")
        return self.backend.block_count(n, _i64(block_size, "block_size"), _bool(is_eagle, "is_eagle"))

    def seed(self, lora_name: Optional[str] = None, cache_namespace: Optional[str] = None) -> int:
        """The seed of the local block hashes for these options."""
        return self.backend.seed(_name(lora_name, "lora_name"), _name(cache_namespace, "cache_namespace"))

    def chain_step(self, parent: int, local: int) -> int:
        """The sequence hash of a block from its parent's sequence hash and its local hash."""
        return self.backend.chain_step(_u64(parent, "parent"), _u64(local, "local"))

    # -- Dynamo's functions

    def compute_block_hash_for_seq(
        self,
        tokens: List[int],
        kv_block_size: int,
        block_mm_infos: Optional[List[Optional[Dict[str, Any]]]] = None,
        lora_name: Optional[str] = None,
        is_eagle: Optional[bool] = None,
        cache_namespace: Optional[str] = None,
    ) -> List[int]:
        """Dynamo's ``compute_block_hash_for_seq``: the local block hashes as a list."""
        mm = _mm_from_block_infos(block_mm_infos)
        try:
            out = self.block_hashes(
                tokens,
                kv_block_size,
                lora_name=lora_name,
                cache_namespace=cache_namespace,
                is_eagle=False if is_eagle is None else is_eagle,
                mm_hashes=mm,
            )
        except InvalidArgumentError as e:
            # The library rejects the zero size; Dynamo's callers expect its wording.
            if _int(kv_block_size, "kv_block_size") == 0:
                raise ValueError("kv_block_size cannot be 0") from e
            raise
        return out.tolist()

    def compute_seq_hash_for_block(self, block_hashes: List[int]) -> List[int]:
        """Dynamo's ``compute_seq_hash_for_block``: the sequence hashes as a list."""
        return self.sequence_hashes(block_hashes).tolist()

    def exports(self) -> Dict[str, Any]:
        return {
            "__version__": self.version,
            "SPEC_VERSION": self.spec_version,
            "BACKEND": self.backend.name,
            "compute_block_hash_for_seq": self.compute_block_hash_for_seq,
            "compute_block_hash_for_seq_py": self.compute_block_hash_for_seq,
            "compute_seq_hash_for_block": self.compute_seq_hash_for_block,
            "block_hashes": self.block_hashes,
            "sequence_hashes": self.sequence_hashes,
            "block_and_sequence_hashes": self.block_and_sequence_hashes,
            "raw_hash": self.raw_hash,
            "block_count": self.block_count,
            "seed": self.seed,
            "chain_step": self.chain_step,
            "RadixTree": self.RadixTree,
            "OverlapScores": OverlapScores,
        }
