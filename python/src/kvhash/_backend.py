"""The primitive calls every backend provides: the kvhash ABI, one method an
export, with Python types instead of pointers.

The public API (``_api`` and the modules it binds: ``_hashing``, ``_dynamo``,
``_tree``) is written once over this interface; a backend only moves bytes
across its boundary (ctypes pointers for the shared library, linear-memory
copies for the WASM module) and turns status codes into exceptions
(``_errors.error_for``). No backend computes anything.

Conventions:

- Array arguments are 1-D C-contiguous ``memoryview`` objects whose item size
  is already checked by the API layer: ``u32`` arrays have itemsize 4,
  ``u64`` arrays itemsize 8, raw bytes itemsize 1. Output arrays are
  writable; their capacity is their length.
- Strings (LoRA name, namespace, JSON) are ``bytes``.
- Integers are Python ints already range-checked by the API layer (``u64`` in
  ``[0, 2**64)``, ``u32`` in ``[0, 2**32)``, ``i64`` in ``[-2**63, 2**63)``).
- A call that needs a bigger output buffer raises ``BufferTooSmall(needed)``;
  any other failure raises ``error_for(status, kvhash_last_error())``, the
  message read right after the failing call on the same thread.
"""

from __future__ import annotations

from typing import NamedTuple, Optional, Protocol

Buffer = memoryview


class HashInput(NamedTuple):
    """What every block-hashing export takes before its outputs (the ABI's
    own ``HashInput``): the tokens, the block size, the options."""

    tokens: Buffer
    block_size: int
    lora: bytes
    namespace: bytes
    eagle: bool
    #: u64 media hashes of every block, concatenated, and how many each
    #: block has (u32); both None without multimodal input.
    mm_hashes: Optional[Buffer]
    mm_counts: Optional[Buffer]


class Backend(Protocol):
    """The kvhash ABI as Python methods (see module docstring)."""

    #: "native" or "wasm"
    name: str
    #: where the library or module was loaded from
    path: str

    def version(self) -> str: ...

    def spec_version(self) -> str: ...

    def seed(self, lora: bytes, namespace: bytes) -> int: ...

    def raw_hash(self, data: Buffer) -> int: ...

    def chain_step(self, parent_sequence_hash: int, local_hash: int) -> int: ...

    def block_count(self, n_tokens: int, block_size: int, eagle: bool) -> int: ...

    def block_hashes(self, inputs: HashInput, out: Buffer) -> int: ...

    def block_and_sequence_hashes(self, inputs: HashInput, out_local: Buffer, out_sequence: Buffer) -> int: ...

    def sequence_hashes(self, block_hashes: Buffer, out: Buffer) -> int: ...

    def index_new(self, mode: int) -> int: ...

    def index_free(self, handle: int) -> None: ...

    def index_set_mode(self, handle: int, mode: int) -> None: ...

    def index_apply_json(self, handle: int, worker_id: int, data: bytes) -> None: ...

    def index_apply_router_event_json(self, handle: int, data: bytes) -> None: ...

    def index_apply_stored(
        self,
        handle: int,
        worker_id: int,
        dp_rank: int,
        event_id: int,
        parent_hash: Optional[int],
        block_hashes: Buffer,
        tokens_hashes: Buffer,
    ) -> None: ...

    def index_apply_removed(
        self, handle: int, worker_id: int, dp_rank: int, event_id: int, block_hashes: Buffer
    ) -> None: ...

    def index_clear_worker(self, handle: int, worker_id: int, dp_rank: int) -> None: ...

    def index_clear_all_blocks(self, handle: int, worker_id: int) -> None: ...

    def index_remove_worker(self, handle: int, worker_id: int) -> None: ...

    def index_find_matches(
        self,
        handle: int,
        local_hashes: Buffer,
        early_exit: bool,
        worker_ids: Buffer,
        dp_ranks: Buffer,
        scores: Buffer,
        tree_sizes: Buffer,
    ) -> int: ...

    def index_dump_jsonl(self, handle: int, out: Buffer) -> int: ...

    def index_stats_json(self, handle: int, out: Buffer) -> int: ...

    def index_workers(self, handle: int, worker_ids: Buffer, dp_ranks: Buffer) -> int: ...
