"""A test engine: publishes KV event batches on ZeroMQ as vLLM and SGLang do.

Driven by the Go tests over stdin/stdout, one JSON command a line, one JSON
answer a line ({"ok": true, ...} or {"ok": false, "error": "..."}). Each named
publisher is what one engine rank runs: a PUB socket (here XPUB, which is PUB on
the wire and also tells the test when a subscriber's subscription arrived) that
sends [topic, seq (8 bytes BE), payload] with seq counting from 0, and an
optional ROUTER replay socket answering ["", start_seq] with every buffered
batch from start_seq on and an end marker, in either reply shape:
  4 frames (vLLM >= 0.26): ["", topic, seq, payload] ... ["", "", 0xFF*8, ""]
  3 frames (SGLang, older vLLM): ["", seq, payload] ... ["", 0xFF*8, ""]
Payloads are encoded by msgspec over the engine structs in vllm_wire.py.

Commands (op): open, wait_sub, send, raw, close, quit. See handle().
"""

from __future__ import annotations

import collections
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import zmq

sys.path.insert(0, str(Path(__file__).resolve().parent))

import vllm_wire as w  # noqa: E402

END_SEQ = b"\xff" * 8


def digest_for(h: int) -> bytes:
    """A 32-byte digest whose wire int (last 8 bytes, BE) is h."""
    return bytes(range(24)) + h.to_bytes(8, "big")


def to_hash(h: int, as_bytes: bool) -> w.Hash:
    return digest_for(h & (2**64 - 1)) if as_bytes else h


def to_opt_hash(h: int | None, as_bytes: bool) -> w.Hash | None:
    return None if h is None else to_hash(h, as_bytes)


def build_event(spec: dict[str, Any], layout: str, as_bytes: bool) -> Any:
    """One event from a compact dict: {"type": kind, fields...}."""
    kind = spec["type"]
    hashes = [to_hash(h, as_bytes) for h in spec.get("block_hashes", [])]
    if kind == "BlockStored":
        fields: dict[str, Any] = {
            "block_hashes": hashes,
            "parent_block_hash": to_opt_hash(spec.get("parent_block_hash"), as_bytes),
            "token_ids": spec.get("token_ids", []),
            "block_size": spec.get("block_size", 16),
            "lora_id": spec.get("lora_id"),
            "medium": spec.get("medium", "GPU"),
            "lora_name": spec.get("lora_name"),
        }
        for k in ("extra_keys", "group_idx", "kv_cache_spec_kind", "locality", "session_id"):
            if k in spec:
                fields[k] = spec[k]
        if layout == "sglang":
            fields.pop("lora_name")
            return w.SglBlockStored(cache_salt=spec.get("cache_salt"), **fields)
        cls = w.ArrayBlockStored if layout == "array" else w.MapBlockStored
        return cls(**fields)
    if kind == "BlockRemoved":
        if layout == "sglang":
            return w.SglBlockRemoved(block_hashes=[int(h) for h in spec.get("block_hashes", [])], medium=spec.get("medium"))
        rcls = w.ArrayBlockRemoved if layout == "array" else w.MapBlockRemoved
        return rcls(block_hashes=hashes, medium=spec.get("medium", "GPU"))
    if kind == "AllBlocksCleared":
        return w.ArrayAllBlocksCleared() if layout == "array" else w.MapAllBlocksCleared()
    if kind == "BlockMoved":
        return w.MapBlockMoved(block_hashes=hashes, to_medium="CPU")
    raise ValueError(f"unknown event type {kind!r}")


def bind_retrying(sock: zmq.Socket[bytes], endpoint: str) -> None:
    """Binds, waiting for a port a closed socket of this process still holds
    (libzmq releases it on its I/O thread, after close returns)."""
    deadline = time.monotonic() + 5
    while True:
        try:
            sock.bind(endpoint)
            return
        except zmq.ZMQError as e:
            if e.errno != zmq.EADDRINUSE or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


class Publisher:
    """One engine rank: PUB (XPUB) + optional ROUTER replay, as vLLM runs them."""

    def __init__(self, ctx: zmq.Context[zmq.Socket[bytes]], cmd: dict[str, Any]) -> None:
        self.topic = cmd.get("topic", "").encode()
        self.shape = int(cmd.get("replay_shape", 4))
        self.replay_mode = cmd.get("replay_mode", "answer")
        self.buffer: collections.deque[tuple[int, bytes]] = collections.deque(
            maxlen=int(cmd.get("buffer_steps", 10_000))
        )
        self.lock = threading.Lock()
        self.seq = 0
        self.pub = ctx.socket(zmq.XPUB)
        self.pub.setsockopt(zmq.LINGER, 0)
        self.pub.setsockopt(zmq.XPUB_VERBOSE, 1)
        if cmd.get("bind", True):
            bind_retrying(self.pub, cmd["endpoint"])
        else:
            self.pub.connect(cmd["endpoint"])
        self.router: zmq.Socket[bytes] | None = None
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None
        if cmd.get("replay"):
            self.router = ctx.socket(zmq.ROUTER)
            self.router.setsockopt(zmq.LINGER, 0)
            bind_retrying(self.router, cmd["replay"])
            self.thread = threading.Thread(target=self.serve_replay, daemon=True)
            self.thread.start()

    def wait_sub(self, timeout: float) -> None:
        """Blocks until a subscription message arrives (the SUB is ready)."""
        if not self.pub.poll(int(timeout * 1000)):
            raise TimeoutError("no subscriber subscribed")
        msg = self.pub.recv()
        if not msg or msg[0] != 1:
            raise RuntimeError(f"unexpected XPUB message {msg!r}")

    def send(self, payload: bytes, skip: bool, seq: int | None) -> int:
        with self.lock:
            if seq is not None:
                self.seq = seq
            s = self.seq
            self.seq += 1
            self.buffer.append((s, payload))
        if not skip:
            self.pub.send_multipart((self.topic, s.to_bytes(8, "big"), payload))
        return s

    def serve_replay(self) -> None:
        assert self.router is not None
        while not self.stop.is_set():
            if not self.router.poll(50):
                continue
            frames = self.router.recv_multipart()
            if len(frames) != 3 or self.replay_mode == "silent":
                continue
            ident, _, start_bytes = frames
            start = int.from_bytes(start_bytes, "big")
            with self.lock:
                batches = [(s, p) for s, p in self.buffer if s >= start]
            for s, p in batches:
                if self.shape == 4:
                    self.router.send_multipart((ident, b"", self.topic, s.to_bytes(8, "big"), p))
                else:
                    self.router.send_multipart((ident, b"", s.to_bytes(8, "big"), p))
            if self.shape == 4:
                self.router.send_multipart((ident, b"", b"", END_SEQ, b""))
            else:
                self.router.send_multipart((ident, b"", END_SEQ, b""))

    def close(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join()
        if self.router is not None:
            self.router.close(linger=0)
        self.pub.close(linger=0)


def encode_batch(cmd: dict[str, Any]) -> bytes:
    layout = cmd.get("layout", "map")
    as_bytes = bool(cmd.get("bytes_hashes", False))
    events = [build_event(e, layout, as_bytes) for e in cmd.get("events", [])]
    ts = float(cmd.get("ts", time.time()))
    form = cmd.get("batch_form", "array3")
    dp = cmd.get("dp_rank")
    if form == "map":
        return w.encode(w.MapBatch(ts=ts, events=events, data_parallel_rank=dp))
    if form == "array2":
        return w.encode(w.LegacyArrayBatch(ts=ts, events=events))
    return w.encode(w.ArrayBatch(ts=ts, events=events, data_parallel_rank=dp if dp is not None else 0))


def handle(ctx: zmq.Context[zmq.Socket[bytes]], pubs: dict[str, Publisher], cmd: dict[str, Any]) -> dict[str, Any]:
    op = cmd["op"]
    if op == "open":
        # {name, endpoint, bind?, replay?, replay_shape?, replay_mode?, buffer_steps?, topic?}
        if cmd["name"] in pubs:
            pubs.pop(cmd["name"]).close()
        pubs[cmd["name"]] = Publisher(ctx, cmd)
        return {"ok": True}
    if op == "wait_sub":
        pubs[cmd["name"]].wait_sub(float(cmd.get("timeout", 10)))
        return {"ok": True}
    if op == "send":
        # {name, events, layout?, bytes_hashes?, batch_form?, dp_rank?, skip?, seq?}
        payload = encode_batch(cmd)
        seq = pubs[cmd["name"]].send(payload, bool(cmd.get("skip", False)), cmd.get("seq"))
        return {"ok": True, "seq": seq}
    if op == "raw":
        # {name, frames: [hex...]}: any multipart message, malformed ones included
        pubs[cmd["name"]].pub.send_multipart([bytes.fromhex(f) for f in cmd["frames"]])
        return {"ok": True}
    if op == "close":
        pubs.pop(cmd["name"]).close()
        return {"ok": True}
    raise ValueError(f"unknown op {op!r}")


def main() -> None:
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    pubs: dict[str, Publisher] = {}
    print(json.dumps({"ok": True, "ready": True}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        cmd = json.loads(line)
        if cmd.get("op") == "quit":
            break
        try:
            answer = handle(ctx, pubs, cmd)
        except Exception as e:  # the test reads the error; the publisher goes on
            answer = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        print(json.dumps(answer), flush=True)
    for p in pubs.values():
        p.close()
    ctx.term()


if __name__ == "__main__":
    main()
