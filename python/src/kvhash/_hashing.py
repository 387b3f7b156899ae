"""The hashing functions (``kvhash.block_hashes`` and friends) over one
backend.

Each converts its arguments, calls one backend primitive and converts the
result back; hashing and block counting are the library's. The array results
follow the input: a numpy array in, a numpy uint64 array out; anything else
in, ``array('Q')`` out.
"""

from __future__ import annotations

import array
from typing import TYPE_CHECKING, Any, Optional, Sequence, Tuple, overload

from ._backend import Backend, HashInput
from ._convert import is_numpy, mm_arrays, to_bool, to_i64, to_name, to_u64, u32_view, u64_view
from ._output import grow_call, grow_call_outputs, new_u64, truncate

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from ._types import Buffer, IntArray, U64Array

# The overloads give the precise result type for each kind of input. A list,
# array('I') or memoryview is a Sequence[int] and a numpy array is not, so
# the first two never overlap; the last covers every other iterable or
# buffer, whose result type is known only at run time.


class Hashing:
    """The hashing functions bound to one backend."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    @overload
    def block_hashes(
        self,
        tokens: Sequence[int],
        block_size: int,
        *,
        lora_name: Optional[str] = None,
        cache_namespace: Optional[str] = None,
        is_eagle: bool = False,
        mm_hashes: Optional[Sequence[Optional[Sequence[int]]]] = None,
    ) -> array.array[int]: ...

    @overload
    def block_hashes(
        self,
        tokens: NDArray[Any],
        block_size: int,
        *,
        lora_name: Optional[str] = None,
        cache_namespace: Optional[str] = None,
        is_eagle: bool = False,
        mm_hashes: Optional[Sequence[Optional[Sequence[int]]]] = None,
    ) -> NDArray[np.uint64]: ...

    @overload
    def block_hashes(
        self,
        tokens: IntArray,
        block_size: int,
        *,
        lora_name: Optional[str] = None,
        cache_namespace: Optional[str] = None,
        is_eagle: bool = False,
        mm_hashes: Optional[Sequence[Optional[Sequence[int]]]] = None,
    ) -> U64Array: ...

    def block_hashes(
        self,
        tokens: IntArray,
        block_size: int,
        *,
        lora_name: Optional[str] = None,
        cache_namespace: Optional[str] = None,
        is_eagle: bool = False,
        mm_hashes: Optional[Sequence[Optional[Sequence[int]]]] = None,
    ) -> U64Array:
        """Canonical local block hashes of `tokens`, one per full block.

        `tokens`: any C-contiguous buffer of u32 (``array('I')``, numpy
        uint32, memoryview format 'I') used in place without a copy, or a list
        of ints. `mm_hashes`: one entry a block, None or a list of u64 media
        hashes. Returns ``array('Q')``, or a numpy uint64 array for a numpy
        input."""
        tok = u32_view(tokens, "tokens")
        try:
            inputs = _hash_input(tok, block_size, lora_name, cache_namespace, is_eagle, mm_hashes)
            backend = self.backend
            out, n = grow_call(
                lambda cap: new_u64(cap, is_numpy(tokens)),
                lambda mv: backend.block_hashes(inputs, mv),
                _capacity_hint(inputs),
            )
        finally:
            tok.release()
        return truncate(out, n)

    @overload
    def block_and_sequence_hashes(
        self,
        tokens: Sequence[int],
        block_size: int,
        *,
        lora_name: Optional[str] = None,
        cache_namespace: Optional[str] = None,
        is_eagle: bool = False,
        mm_hashes: Optional[Sequence[Optional[Sequence[int]]]] = None,
    ) -> Tuple[array.array[int], array.array[int]]: ...

    @overload
    def block_and_sequence_hashes(
        self,
        tokens: NDArray[Any],
        block_size: int,
        *,
        lora_name: Optional[str] = None,
        cache_namespace: Optional[str] = None,
        is_eagle: bool = False,
        mm_hashes: Optional[Sequence[Optional[Sequence[int]]]] = None,
    ) -> Tuple[NDArray[np.uint64], NDArray[np.uint64]]: ...

    @overload
    def block_and_sequence_hashes(
        self,
        tokens: IntArray,
        block_size: int,
        *,
        lora_name: Optional[str] = None,
        cache_namespace: Optional[str] = None,
        is_eagle: bool = False,
        mm_hashes: Optional[Sequence[Optional[Sequence[int]]]] = None,
    ) -> Tuple[U64Array, U64Array]: ...

    def block_and_sequence_hashes(
        self,
        tokens: IntArray,
        block_size: int,
        *,
        lora_name: Optional[str] = None,
        cache_namespace: Optional[str] = None,
        is_eagle: bool = False,
        mm_hashes: Optional[Sequence[Optional[Sequence[int]]]] = None,
    ) -> Tuple[U64Array, U64Array]:
        """``block_hashes`` and ``sequence_hashes`` in one library call (one
        pass over the tokens): returns ``(local, sequence)``, each
        ``array('Q')`` (numpy uint64 for a numpy input). Same arguments as
        ``block_hashes``."""
        tok = u32_view(tokens, "tokens")
        try:
            inputs = _hash_input(tok, block_size, lora_name, cache_namespace, is_eagle, mm_hashes)
            like_numpy = is_numpy(tokens)
            backend = self.backend
            (local, seq), n = grow_call_outputs(
                lambda cap: new_u64(cap, like_numpy),
                lambda views: backend.block_and_sequence_hashes(inputs, *views),
                _capacity_hint(inputs),
                2,
            )
        finally:
            tok.release()
        return truncate(local, n), truncate(seq, n)

    def raw_hash(self, data: Buffer) -> int:
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

    @overload
    def sequence_hashes(self, block_hashes: Sequence[int]) -> array.array[int]: ...

    @overload
    def sequence_hashes(self, block_hashes: NDArray[Any]) -> NDArray[np.uint64]: ...

    @overload
    def sequence_hashes(self, block_hashes: IntArray) -> U64Array: ...

    def sequence_hashes(self, block_hashes: IntArray) -> U64Array:
        """The sequence-hash chain over local block hashes (u64 buffer or list).
        Returns ``array('Q')`` (numpy uint64 for a numpy input)."""
        loc = u64_view(block_hashes, "block_hashes")
        try:
            backend = self.backend
            out, n = grow_call(
                lambda cap: new_u64(cap, is_numpy(block_hashes)),
                lambda mv: backend.sequence_hashes(loc, mv),
                len(loc),
            )
        finally:
            loc.release()
        return truncate(out, n)

    def block_count(self, n_tokens: int, block_size: int, *, is_eagle: bool = False) -> int:
        """How many block hashes a prompt of `n_tokens` tokens has."""
        n = to_u64(n_tokens, "n_tokens")
        return self.backend.block_count(n, to_i64(block_size, "block_size"), to_bool(is_eagle, "is_eagle"))

    def seed(self, lora_name: Optional[str] = None, cache_namespace: Optional[str] = None) -> int:
        """The seed of the local block hashes for these options."""
        return self.backend.seed(to_name(lora_name, "lora_name"), to_name(cache_namespace, "cache_namespace"))

    def chain_step(self, parent: int, local: int) -> int:
        """The sequence hash of a block from its parent's sequence hash and its local hash."""
        return self.backend.chain_step(to_u64(parent, "parent"), to_u64(local, "local"))


def _hash_input(
    tokens: memoryview,
    block_size: Any,
    lora_name: Any,
    cache_namespace: Any,
    is_eagle: Any,
    mm_hashes: Any,
) -> HashInput:
    """The block-hashing arguments checked and converted for the backend,
    in the order of the signature (the first bad one is reported)."""
    size = to_i64(block_size, "block_size")
    lora = to_name(lora_name, "lora_name")
    namespace = to_name(cache_namespace, "cache_namespace")
    eagle = to_bool(is_eagle, "is_eagle")
    mm, counts = mm_arrays(mm_hashes)
    return HashInput(tokens, size, lora, namespace, eagle, mm, counts)


def _capacity_hint(inputs: HashInput) -> int:
    """How many hashes to make room for first. A hint only: the library
    reports the real count, and asks for more room (BUFFER_TOO_SMALL) when
    the hint is short."""
    size = inputs.block_size
    return len(inputs.tokens) // size if size > 0 else 0
