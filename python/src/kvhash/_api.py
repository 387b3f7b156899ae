"""The public API bound to one backend.

The API is written once over the backend interface (``_backend``): the
hashing functions (``_hashing``), Dynamo's functions (``_dynamo``) and the
index (``_tree``). This module binds them to one backend and lists the names
``kvhash``, ``kvhash._native`` and ``kvhash.wasm`` expose. Hashing, block
counting, index semantics and the decision of what is an error all live in
the library (the Go core behind the C ABI and the WASM module).
"""

from __future__ import annotations

from typing import Any, Dict, Type

from ._backend import Backend
from ._dynamo import DynamoFunctions, lora_name_to_id
from ._hashing import Hashing
from ._tree import OverlapScores, RadixTree, bind_radix_tree

__all__ = ["API", "OverlapScores", "RadixTree"]


class API:
    """The public API bound to one backend. ``exports()`` are the names the
    ``kvhash`` package (and ``kvhash._native`` / ``kvhash.wasm``) expose."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.version = backend.version()
        self.spec_version = backend.spec_version()
        self.RadixTree: Type[RadixTree] = bind_radix_tree(backend)
        hashing = Hashing(backend)
        dynamo = DynamoFunctions(hashing)
        # Attributes, not only entries of exports(): kvhash/__init__.py
        # re-exports them one by one so that type checkers see each
        # function's signature (exports() is a dict of Any).
        self.block_hashes = hashing.block_hashes
        self.block_and_sequence_hashes = hashing.block_and_sequence_hashes
        self.raw_hash = hashing.raw_hash
        self.sequence_hashes = hashing.sequence_hashes
        self.block_count = hashing.block_count
        self.seed = hashing.seed
        self.chain_step = hashing.chain_step
        self.compute_block_hash_for_seq = dynamo.compute_block_hash_for_seq
        self.compute_seq_hash_for_block = dynamo.compute_seq_hash_for_block
        self.lora_name_to_id = lora_name_to_id

    def exports(self) -> Dict[str, Any]:
        return {
            "__version__": self.version,
            "SPEC_VERSION": self.spec_version,
            "BACKEND": self.backend.name,
            "compute_block_hash_for_seq": self.compute_block_hash_for_seq,
            "compute_block_hash_for_seq_py": self.compute_block_hash_for_seq,
            "compute_seq_hash_for_block": self.compute_seq_hash_for_block,
            "lora_name_to_id": self.lora_name_to_id,
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
