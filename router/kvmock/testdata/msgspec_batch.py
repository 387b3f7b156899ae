"""Encode kvmock's fixed test batch the way vLLM does: msgspec structs,
omit_defaults, tagged by class name; maps (vLLM >= 0.24) or positional
arrays (older vLLM). Prints one line per variant: "<format>/<hashes> <hex>".

The structs restate vLLM's public field order and defaults (see
vllm/distributed/kv_events.py); kvmock's Go encoder must produce the same
bytes. Run by encode_msgspec_test.go when build/venv exists.
"""

from typing import Any

import msgspec


def make(array_like: bool) -> tuple[type, ...]:
    class Event(msgspec.Struct, tag=True, omit_defaults=True, array_like=array_like):
        pass

    class BlockStored(Event):
        block_hashes: list[Any]
        parent_block_hash: Any
        token_ids: list[int]
        block_size: int
        lora_id: int | None
        medium: str | None
        lora_name: str | None
        extra_keys: list[Any] | None = None
        group_idx: int | None = None
        kv_cache_spec_kind: str | None = None
        kv_cache_spec_sliding_window: int | None = None

    class BlockRemoved(Event):
        block_hashes: list[Any]
        medium: str | None
        group_idx: int | None = None

    class AllBlocksCleared(Event):
        pass

    class Batch(msgspec.Struct, array_like=True, omit_defaults=True):
        ts: float
        events: list[Any]
        data_parallel_rank: int | None = None

    return BlockStored, BlockRemoved, AllBlocksCleared, Batch


def digest(n: int) -> bytes:
    # Same as the Go test's digests(): 0xD0, zeros, n; byte 24 set on the first.
    d = bytearray(32)
    d[0] = 0xD0
    d[31] = n
    return bytes(d)


def main() -> None:
    d1 = bytearray(digest(1))
    d1[24] = 0xF0
    blocks = [bytes(d1), digest(2)]
    parent = digest(0x77)
    for fmt in ("map", "array"):
        stored_cls, removed_cls, cleared_cls, batch_cls = make(fmt == "array")
        for hashes in ("int", "bytes"):
            conv = (lambda b: int.from_bytes(b[-8:], "big")) if hashes == "int" else (lambda b: b)
            events = [
                stored_cls([conv(b) for b in blocks], conv(parent), list(range(300, 308)), 4, None, "GPU", None),
                stored_cls([conv(digest(3))], None, [1, 2, 3, 4], 4, None, "GPU", None),
                stored_cls(
                    [conv(digest(4)), conv(digest(5))], conv(digest(3)), list(range(8)), 4, 1, "GPU", "adapter-a",
                    extra_keys=[("adapter-a", "tenant-7"), ("adapter-a",)],
                ),
                stored_cls([conv(digest(6))], None, [9, 9, 9, 9], 4, None, "GPU", None, extra_keys=[None]),
                removed_cls([conv(digest(2))], "GPU"),
                cleared_cls(),
            ]
            payload = msgspec.msgpack.encode(batch_cls(1.5, events, 0))
            print(f"{fmt}/{hashes} {payload.hex()}")


main()
