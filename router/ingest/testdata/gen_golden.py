"""Writes the decoder's golden files: engine payloads and the fields in them.

Each case is one batch as an engine encodes it (``vllm_wire``, msgspec), saved
as ``golden/<case>.msgpack`` (the payload frame, byte for byte) beside
``golden/<case>.json`` (what a decoder must read from it: the normalized
fields, hashes already as the u64 a router uses). Go's decoder tests read both;
``router/tests/test_ingest_golden.py`` regenerates them and fails on drift.

Run: build/venv/bin/python router/ingest/testdata/gen_golden.py [--out DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import vllm_wire as w  # noqa: E402

Batch = w.LegacyArrayBatch | w.ArrayBatch | w.MapBatch
Case = tuple[str, Batch, str]


def digest(i: int) -> bytes:
    """A 32-byte block digest, as vLLM's sha256 hashing makes them."""
    return hashlib.sha256(i.to_bytes(4, "little")).digest()


def tokens(start: int, n: int) -> list[int]:
    return list(range(start, start + n))


U64_TOP = 2**64 - 5  # above i64: must survive as unsigned


def cases() -> list[Case]:
    return [
        (
            "vllm_map_events_int_hashes",
            w.ArrayBatch(
                ts=1764570000.25,
                events=[
                    w.MapBlockStored(
                        block_hashes=[11, U64_TOP],
                        parent_block_hash=None,
                        token_ids=tokens(0, 32),
                        block_size=16,
                        lora_id=None,
                        medium="GPU",
                        lora_name=None,
                    ),
                    w.MapBlockRemoved(block_hashes=[11], medium="GPU"),
                    w.MapAllBlocksCleared(),
                ],
                data_parallel_rank=0,
            ),
            "vLLM >= 0.24: map events, int hashes, 3-element batch",
        ),
        (
            "vllm_array_events_bytes_hashes",
            w.LegacyArrayBatch(
                ts=1764570001.5,
                events=[
                    w.ArrayBlockStored(
                        block_hashes=[digest(1), digest(2)],
                        parent_block_hash=digest(0),
                        token_ids=tokens(100, 32),
                        block_size=16,
                        lora_id=None,
                        medium="GPU",
                    ),
                    w.ArrayBlockRemoved(block_hashes=[digest(1)], medium=None),
                    w.ArrayAllBlocksCleared(),
                ],
            ),
            "vLLM < 0.24: positional events, bytes hashes, 2-element batch",
        ),
        (
            "vllm_map_batch",
            w.MapBatch(
                ts=1764570002.0,
                events=[
                    w.MapBlockStored(
                        block_hashes=[7],
                        parent_block_hash=6,
                        token_ids=tokens(5000, 16),
                        block_size=16,
                        lora_id=3,
                        medium="CPU",
                        lora_name="adapter-a",
                    )
                ],
                data_parallel_rank=2,
            ),
            "a map batch with its data_parallel_rank",
        ),
        (
            "vllm_033_every_field",
            w.ArrayBatch(
                ts=1764570003.0,
                events=[
                    w.MapBlockStored(
                        block_hashes=[digest(10), digest(11)],
                        parent_block_hash=None,
                        token_ids=tokens(2**32 - 32, 32),
                        block_size=16,
                        lora_id=None,
                        medium="GPU",
                        lora_name="adapter-b",
                        extra_keys=[["adapter-b", "tenant-salt"], None],
                        group_idx=1,
                        kv_cache_spec_kind="full_attention",
                        kv_cache_spec_sliding_window=4096,
                        locality="LOCAL",
                        ownership="OWNED",
                        session_id="sess-42",
                        lookahead_token_ids=[[7, 8], None],
                    ),
                    w.MapBlockRemoved(
                        block_hashes=[digest(10)], medium="GPU", group_idx=1,
                        locality="REMOTE", ownership="SHARED",
                    ),
                ],
                data_parallel_rank=None,
            ),
            "vLLM 0.33: every BlockStored field, max u32 token ids",
        ),
        (
            "vllm_array_every_field_and_tail",
            w.ArrayBatch(
                ts=1764570004.0,
                events=[
                    w.ArrayBlockStoredFuture(
                        block_hashes=[1, 2],
                        parent_block_hash=0,
                        token_ids=tokens(1, 32),
                        block_size=16,
                        lora_id=None,
                        medium="GPU",
                        lora_name="adapter-c",
                        extra_keys=None,
                        group_idx=0,
                        kv_cache_spec_kind="full_attention",
                        kv_cache_spec_sliding_window=None,
                        locality="LOCAL",
                        ownership="OWNED",
                        session_id="sess-1",
                        lookahead_token_ids=[[33], [34]],
                        future_field=99,
                    ),
                ],
                data_parallel_rank=1,
            ),
            "positional event with all fields in vLLM's order plus one newer tail field",
        ),
        (
            "sglang_map_signed_hashes",
            w.LegacyArrayBatch(
                ts=1764570005.0,
                events=[
                    w.SglBlockStored(
                        block_hashes=[-2, -(2**63)],
                        parent_block_hash=-1,
                        token_ids=tokens(9, 32),
                        block_size=16,
                        medium="CPU_TIER1",
                        cache_salt="tenant-7",
                        session_id="sg-5",
                    ),
                    w.SglBlockRemoved(block_hashes=[-2]),
                ],
            ),
            "SGLang: signed i64 hashes, cache_salt, session_id",
        ),
        (
            "short_bytes_hash_and_unknown_keys",
            w.ArrayBatch(
                ts=1764570006.0,
                events=[
                    w.MapBlockStoredFuture(
                        block_hashes=[b"\x01\x02\x03", b""],
                        parent_block_hash=b"\xff" * 8,
                        token_ids=tokens(0, 32),
                        block_size=16,
                        lora_id=None,
                        medium="GPU",
                        lora_name=None,
                        new_key={"a": 1},
                    ),
                ],
                data_parallel_rank=0,
            ),
            "bytes hashes shorter than 8 bytes; a map key the router does not know",
        ),
        (
            "unknown_event_kind",
            w.ArrayBatch(
                ts=1764570007.0,
                events=[
                    w.MapBlockMoved(block_hashes=[5], to_medium="CPU"),
                    w.MapBlockRemoved(block_hashes=[5], medium="GPU"),
                ],
                data_parallel_rank=0,
            ),
            "an event kind the router does not know, beside a known one",
        ),
        (
            "offload_placeholder_store",
            w.ArrayBatch(
                ts=1764570008.0,
                events=[
                    w.ArrayBlockStored(
                        block_hashes=[digest(3)],
                        parent_block_hash=None,
                        token_ids=[],
                        block_size=0,
                        lora_id=None,
                        medium="CPU",
                    ),
                ],
                data_parallel_rank=0,
            ),
            "a token-less offload store (the indexer skips it; the decoder keeps it)",
        ),
    ]


def random_cases(n: int, seed: int) -> list[Case]:
    """Random batches in every layout, for the decoder's differential test."""
    rng = random.Random(seed)

    def u64_or_bytes() -> w.Hash:
        if rng.random() < 0.5:
            return rng.randrange(2**64)
        return rng.randbytes(rng.choice([0, 3, 8, 32, 40]))

    def i64() -> int:
        return rng.randrange(-(2**63), 2**63)

    def toks() -> list[int]:
        top = rng.choice([128, 2**16, 2**32])
        return [rng.randrange(top) for _ in range(rng.choice([0, 1, 16, 33]))]

    def opt(v: Any) -> Any:
        return v if rng.random() < 0.5 else None

    def event(layout: str) -> Any:
        kind = rng.choice(["stored", "stored", "removed", "cleared"])
        n = rng.randrange(0, 5)
        if layout == "sglang":
            if kind == "stored":
                return w.SglBlockStored(
                    block_hashes=[i64() for _ in range(n)], parent_block_hash=opt(i64()), token_ids=toks(),
                    block_size=16, lora_id=opt(rng.randrange(9)), medium=opt("CPU_TIER1"),
                    cache_salt=opt("salt-%d" % rng.randrange(99)), session_id=opt("s%d" % rng.randrange(99)),
                )
            return w.SglBlockRemoved(block_hashes=[i64() for _ in range(n)], medium=opt("GPU"))
        if kind == "cleared":
            return w.ArrayAllBlocksCleared() if layout == "array" else w.MapAllBlocksCleared()
        if kind == "removed":
            rcls = w.ArrayBlockRemoved if layout == "array" else w.MapBlockRemoved
            return rcls(
                block_hashes=[u64_or_bytes() for _ in range(n)], medium=opt("GPU"), group_idx=opt(rng.randrange(3)),
                locality=opt("REMOTE"), ownership=opt("OWNED"),
            )
        cls = w.ArrayBlockStored if layout == "array" else w.MapBlockStored
        return cls(
            block_hashes=[u64_or_bytes() for _ in range(n)], parent_block_hash=opt(u64_or_bytes()), token_ids=toks(),
            block_size=rng.choice([0, 16, 2096]), lora_id=opt(rng.randrange(9)), medium=opt("GPU"),
            lora_name=opt("lora-%d" % rng.randrange(9)),
            extra_keys=opt([opt(["k", rng.randrange(9)]) for _ in range(n)]),
            group_idx=opt(rng.randrange(3)), kv_cache_spec_kind=opt("full_attention"),
            kv_cache_spec_sliding_window=opt(rng.randrange(1, 9000)), locality=opt("LOCAL"),
            ownership=opt("OWNED"), session_id=opt("sess"),
            lookahead_token_ids=opt([opt(toks()) for _ in range(n)]),
        )

    cases: list[Case] = []
    for i in range(n):
        layout = rng.choice(["array", "map", "sglang"])
        events = [event(layout) for _ in range(rng.randrange(0, 6))]
        ts = rng.uniform(0, 2e9)
        form = rng.choice(["legacy", "array", "map"])
        dp = opt(rng.randrange(8))
        batch: Batch
        if form == "legacy":
            batch = w.LegacyArrayBatch(ts=ts, events=events)
        elif form == "array":
            batch = w.ArrayBatch(ts=ts, events=events, data_parallel_rank=dp)
        else:
            batch = w.MapBatch(ts=ts, events=events, data_parallel_rank=dp)
        cases.append((f"random_{seed}_{i:03d}", batch, f"random {layout} events in a {form} batch"))
    return cases


def opt_hash(h: w.Hash | None) -> int | None:
    return None if h is None else w.wire_hash(h)


KNOWN = ("BlockStored", "BlockRemoved", "AllBlocksCleared")


def expected_event(ev: Any) -> dict[str, Any]:
    """The fields a decoder must read, named as Go's ingest.Event names them."""
    kind = type(ev).__struct_config__.tag
    out: dict[str, Any] = {"kind": kind}
    for name in ev.__struct_fields__:
        out[name] = getattr(ev, name)
    if "block_hashes" in out:
        out["block_hashes"] = [w.wire_hash(h) for h in out["block_hashes"]]
    if "parent_block_hash" in out:
        out["parent_block_hash"] = opt_hash(out["parent_block_hash"])
    out.pop("future_field", None)
    out.pop("new_key", None)
    return out


def expected(topic: str, seq: int, batch: Batch) -> dict[str, Any]:
    events = [expected_event(e) for e in batch.events]
    return {
        "topic": topic,
        "seq": seq,
        "ts": batch.ts,
        "data_parallel_rank": getattr(batch, "data_parallel_rank", None),
        "events": [e for e in events if e["kind"] in KNOWN],
        "unknown": sum(1 for e in events if e["kind"] not in KNOWN),
    }


def write(out: Path, which: list[Case] | None = None) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for seq, (name, batch, about) in enumerate(cases() if which is None else which):
        payload = out / f"{name}.msgpack"
        payload.write_bytes(w.encode(batch))
        doc = {"about": about, "want": expected("kv", seq, batch)}
        fields = out / f"{name}.json"
        fields.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        written += [payload, fields]
    return written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "golden")
    ap.add_argument("--random", type=int, default=0, help="write N random cases instead of the golden ones")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    which = random_cases(args.random, args.seed) if args.random else None
    for p in write(args.out, which):
        print(p)


if __name__ == "__main__":
    main()
