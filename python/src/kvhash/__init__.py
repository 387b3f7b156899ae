"""kvhash: canonical KV-cache block hashing and a hash-stable KV index.

A drop-in for the hashing and ``RadixTree`` parts of Dynamo's ``dynamo.llm``
bindings, plus a zero-copy buffer API. Every hash and every index decision is
made by the kvhash library (the Go core behind a C ABI or a WASM module);
this package converts types and errors only.

Backends: ``native`` (ctypes over ``libkvhash.so``, the default) and ``wasm``
(wasmtime over ``kvhash.wasm``), chosen with ``KVHASH_BACKEND``. Both are also
importable directly as ``kvhash._native`` and ``kvhash.wasm``. Lists of ints
are converted by an optional C extension when it is available (``SPEEDUPS``).

See docs/api/python.md for the full reference.
"""

from __future__ import annotations

import os as _os

from . import _ints
from ._errors import (
    DecodeError,
    InternalError,
    InvalidArgumentError,
    KvHashError,
    NoMemoryError,
    RejectedError,
    UnknownHandleError,
)

_choice = _os.environ.get("KVHASH_BACKEND", "native").strip().lower() or "native"
if _choice == "native":
    from ._native import api as _bound
elif _choice == "wasm":
    from .wasm import api as _bound
else:
    raise ImportError("KVHASH_BACKEND must be 'native' or 'wasm', not %r" % _choice)

#: The library's implementation version (kvhash_version).
__version__: str = _bound.version
#: The hashing spec version the library implements (kvhash_spec_version), e.g. "v1".
SPEC_VERSION: str = _bound.spec_version
#: The backend in use: "native" or "wasm".
BACKEND: str = _bound.backend.name
#: Whether the C extension kvhash._speedups converts lists of ints (else the
#: array module does, slower, with the same results and errors).
SPEEDUPS: bool = _ints.speedups is not None

compute_block_hash_for_seq = _bound.compute_block_hash_for_seq
compute_block_hash_for_seq_py = _bound.compute_block_hash_for_seq
compute_seq_hash_for_block = _bound.compute_seq_hash_for_block
lora_name_to_id = _bound.lora_name_to_id
block_hashes = _bound.block_hashes
sequence_hashes = _bound.sequence_hashes
block_and_sequence_hashes = _bound.block_and_sequence_hashes
raw_hash = _bound.raw_hash
block_count = _bound.block_count
seed = _bound.seed
chain_step = _bound.chain_step
RadixTree = _bound.RadixTree
from ._tree import OverlapScores  # noqa: E402

__all__ = [
    "__version__",
    "SPEC_VERSION",
    "BACKEND",
    "SPEEDUPS",
    "compute_block_hash_for_seq",
    "compute_block_hash_for_seq_py",
    "compute_seq_hash_for_block",
    "lora_name_to_id",
    "block_hashes",
    "sequence_hashes",
    "block_and_sequence_hashes",
    "raw_hash",
    "block_count",
    "seed",
    "chain_step",
    "RadixTree",
    "OverlapScores",
    "KvHashError",
    "InvalidArgumentError",
    "DecodeError",
    "RejectedError",
    "UnknownHandleError",
    "InternalError",
    "NoMemoryError",
]
