"""Engine KV event wire types, declared as vLLM and SGLang declare theirs.

vLLM encodes its events with ``msgspec.msgpack.Encoder`` over ``msgspec.Struct``
classes with ``omit_defaults=True`` and ``tag=True`` (the tag is the class
name). Releases before 0.24 also set ``array_like=True``: positional arrays, tag
first. msgspec ignores ``omit_defaults`` for array-like structs (its issue 720),
so those arrays carry every field; a decoder must still accept shorter ones
(trailing defaults left out, as other encoders do) and longer ones (newer
fields). Later releases send maps with the tag under ``"type"``, defaults
omitted. The batch is ``[ts, events, data_parallel_rank]`` in current releases,
``[ts, events]`` in SGLang and older vLLM (their struct has no rank field), and
a map in some. These classes reproduce those layouts so the
golden files and the test publisher emit the bytes engines emit; the field
order is the engines' (see docs of kvhash's router, reference section 4).
"""

from __future__ import annotations

from typing import Any, Union

import msgspec

Hash = Union[int, bytes]


# --- positional (array) layout: vLLM before 0.24 --------------------------


class ArrayEvent(msgspec.Struct, array_like=True, omit_defaults=True, gc=False, tag=True):
    """Base of the positional events."""


class ArrayBlockStored(ArrayEvent, tag="BlockStored"):
    block_hashes: list[Hash]
    parent_block_hash: Hash | None
    token_ids: list[int]
    block_size: int
    lora_id: int | None
    medium: str | None
    lora_name: str | None = None
    extra_keys: list[list[Any] | None] | None = None
    group_idx: int | None = None
    kv_cache_spec_kind: str | None = None
    kv_cache_spec_sliding_window: int | None = None
    locality: str | None = None
    ownership: str | None = None
    session_id: str | None = None
    lookahead_token_ids: list[list[int] | None] | None = None


class ArrayBlockStoredFuture(ArrayBlockStored, tag="BlockStored"):
    """A release newer than the router: one more field at the tail."""

    future_field: int | None = None


class ArrayBlockRemoved(ArrayEvent, tag="BlockRemoved"):
    block_hashes: list[Hash]
    medium: str | None
    group_idx: int | None = None
    locality: str | None = None
    ownership: str | None = None


class ArrayAllBlocksCleared(ArrayEvent, tag="AllBlocksCleared"):
    pass


# --- map layout: vLLM >= 0.24 ---------------------------------------------


class MapEvent(msgspec.Struct, omit_defaults=True, gc=False, tag=True):
    """Base of the map events (tag under "type")."""


class MapBlockStored(MapEvent, tag="BlockStored"):
    block_hashes: list[Hash]
    parent_block_hash: Hash | None
    token_ids: list[int]
    block_size: int
    lora_id: int | None
    medium: str | None
    lora_name: str | None
    extra_keys: list[list[Any] | None] | None = None
    group_idx: int | None = None
    kv_cache_spec_kind: str | None = None
    kv_cache_spec_sliding_window: int | None = None
    locality: str | None = None
    ownership: str | None = None
    session_id: str | None = None
    lookahead_token_ids: list[list[int] | None] | None = None


class MapBlockStoredFuture(MapBlockStored, tag="BlockStored"):
    """A release newer than the router: a key it does not know."""

    new_key: dict[str, int] | None = None


class MapBlockRemoved(MapEvent, tag="BlockRemoved"):
    block_hashes: list[Hash]
    medium: str | None
    group_idx: int | None = None
    locality: str | None = None
    ownership: str | None = None


class MapAllBlocksCleared(MapEvent, tag="AllBlocksCleared"):
    pass


class MapBlockMoved(MapEvent, tag="BlockMoved"):
    """An event kind the router does not know."""

    block_hashes: list[Hash]
    to_medium: str


# --- SGLang's map events (cache_salt, session_id, signed hashes) ----------


class SglBlockStored(MapEvent, tag="BlockStored"):
    block_hashes: list[int]
    parent_block_hash: int | None
    token_ids: list[int]
    block_size: int
    lora_id: int | None = None
    medium: str | None = None
    cache_salt: str | None = None
    session_id: str | None = None


class SglBlockRemoved(MapEvent, tag="BlockRemoved"):
    block_hashes: list[int]
    medium: str | None = None


# --- batches ---------------------------------------------------------------


class LegacyArrayBatch(msgspec.Struct, array_like=True, omit_defaults=True, gc=False):
    """[ts, events]: SGLang's and older vLLM's batch."""

    ts: float
    events: list[Any]


class ArrayBatch(msgspec.Struct, array_like=True, omit_defaults=True, gc=False):
    """[ts, events, dp_rank] (dp_rank may be nil)."""

    ts: float
    events: list[Any]
    data_parallel_rank: int | None = None


class MapBatch(msgspec.Struct, omit_defaults=True, gc=False):
    """{"ts", "events", "data_parallel_rank"}."""

    ts: float
    events: list[Any]
    data_parallel_rank: int | None = None


_ENCODER = msgspec.msgpack.Encoder()


def encode(batch: LegacyArrayBatch | ArrayBatch | MapBatch) -> bytes:
    """The payload frame, as the engines' publisher thread encodes it."""
    return _ENCODER.encode(batch)


def wire_hash(h: Hash) -> int:
    """The u64 a router must read for a hash (ints: bits; bytes: last 8, BE)."""
    if isinstance(h, bytes):
        return int.from_bytes(h[-8:], "big")
    return h & (2**64 - 1)
