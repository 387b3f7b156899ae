"""kvhash's RadixTree against Dynamo's own (ai-dynamo-runtime's
``dynamo.llm.RadixTree``, Rust under PyO3), through Python, on the
side-by-side streams (``indexstream gen``: the Mooncake trace routed to 16
or 128 simulated engines; format in core/internal/indexbench/stream.go).

Both trees get the same calls with the same arguments:

- ``apply_event(worker_id, json_bytes)``: every stored and removed event of
  the stream as Dynamo's KvCacheEvent JSON (built once, before timing);
- ``find_matches(list_of_ints)``: every routing query, in stream order, each
  after the events before it.

Each run replays the whole stream into a fresh tree and times every call
(time.perf_counter_ns around the call). Runs alternate kvhash, Dynamo,
kvhash, ... so load from other jobs falls on both; the figures are medians
over runs. Ratios are kvhash / Dynamo throughput (above 1: kvhash faster),
the median over the pairs of runs made one after the other.
The scores of every query are folded into one digest per side (as in
stream.go) and must agree. Run: make bench-dynamo-python.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import kvhash
from dynamo.llm import RadixTree as DynamoRadixTree

MAGIC = b"KVSTRM1\n"
FNV_OFFSET = 14695981039346656037
FNV_PRIME = 1099511628211
MASK = (1 << 64) - 1

# An event: (worker id, JSON bytes, blocks); a query: a list of local hashes.
Event = Tuple[int, bytes, int]
Op = Union[Event, List[int]]


@dataclass
class Stream:
    name: str
    workers: int
    ops: List[Op] = field(default_factory=list)


def read_stream(path: str) -> Stream:
    """The routing queries and events of a stream file, the events as
    Dynamo's JSON (the probes are not used here)."""
    with open(path, "rb") as f:
        buf = f.read()
    if not buf.startswith(MAGIC):
        raise ValueError("%s: not a stream file" % path)
    workers, _bs, _cap, _passes = struct.unpack_from("<4I", buf, len(MAGIC))
    s = Stream(os.path.basename(path)[: -len(".kvs")], workers)
    pos = len(MAGIC) + 16
    rec = 0
    while pos < len(buf):
        kind = buf[pos : pos + 1]
        pos += 1
        if kind in (b"M", b"P"):
            (n,) = struct.unpack_from("<I", buf, pos)
            pos += 4
            q = list(struct.unpack_from("<%dQ" % n, buf, pos))
            pos += 8 * n
            if kind == b"M":
                s.ops.append(q)
        elif kind == b"S":
            worker, has_parent, parent, n = struct.unpack_from("<IBQI", buf, pos)
            pos += 17
            pairs = struct.unpack_from("<%dQ" % (2 * n), buf, pos)
            pos += 16 * n
            blocks = [{"block_hash": pairs[2 * i], "tokens_hash": pairs[2 * i + 1]} for i in range(n)]
            ev: Dict[str, Any] = {
                "event_id": rec,
                "data": {"stored": {"parent_hash": parent if has_parent else None, "blocks": blocks}},
                "dp_rank": 0,
            }
            s.ops.append((worker, json.dumps(ev, separators=(",", ":")).encode(), n))
        elif kind == b"R":
            worker, n = struct.unpack_from("<II", buf, pos)
            pos += 8
            hashes = list(struct.unpack_from("<%dQ" % n, buf, pos))
            pos += 8 * n
            ev = {"event_id": rec, "data": {"removed": {"block_hashes": hashes}}, "dp_rank": 0}
            s.ops.append((worker, json.dumps(ev, separators=(",", ":")).encode(), n))
        else:
            raise ValueError("%s: record %d: unknown kind %r" % (path, rec, kind))
        rec += 1
    return s


@dataclass
class Run:
    apply_ns: int = 0
    apply_blocks: int = 0
    apply_bytes: int = 0
    match_ns: int = 0
    match_blocks: int = 0
    match_lat: List[int] = field(default_factory=list)
    digest: int = FNV_OFFSET


def fold(d: int, scores: Dict[Tuple[int, int], int]) -> int:
    d = ((d ^ len(scores)) * FNV_PRIME) & MASK
    for (wid, rank), score in sorted(scores.items()):
        for v in (wid, rank, score):
            d = ((d ^ v) * FNV_PRIME) & MASK
    return d


def replay(tree: Any, s: Stream) -> Run:
    r = Run()
    clock = time.perf_counter_ns
    apply = tree.apply_event
    find = tree.find_matches
    for op in s.ops:
        if isinstance(op, list):
            t0 = clock()
            scores = find(op)
            dt = clock() - t0
            r.match_ns += dt
            r.match_lat.append(dt)
            r.match_blocks += len(op)
            r.digest = fold(r.digest, scores.scores)
        else:
            wid, data, n = op
            t0 = clock()
            apply(wid, data)
            r.apply_ns += clock() - t0
            r.apply_blocks += n
            r.apply_bytes += len(data)
    return r


def percentile(v: List[int], p: float) -> int:
    v = sorted(v)
    return v[int(p / 100 * (len(v) - 1))] if v else 0


def apply_rate(r: Run) -> float:
    return r.apply_blocks / (r.apply_ns / 1e9)


def match_rate(r: Run) -> float:
    return r.match_blocks / (r.match_ns / 1e9)


def paired_ratio(runs: Dict[str, List[Run]], rate: Callable[[Run], float]) -> float:
    """The median over runs of kvhash's rate / Dynamo's in the run made
    next to it: a pair shares the machine's load of the moment, which a
    ratio of medians does not (indexbench.MedianRatio does the same)."""
    return statistics.median(rate(k) / rate(d) for k, d in zip(runs["kvhash"], runs["dynamo"]))


def make_kvhash() -> Any:
    return kvhash.RadixTree()


def make_dynamo() -> Any:
    return DynamoRadixTree()


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--streams", default="build/indexstreams")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated stream names")
    args = ap.parse_args(argv)
    names = sorted(f[:-4] for f in os.listdir(args.streams) if f.endswith(".kvs"))
    if args.only:
        keep = set(args.only.split(","))
        names = [n for n in names if n in keep]
    if not names:
        print("no streams in %s (make index-streams)" % args.streams, file=sys.stderr)
        return 1
    print("kvhash %s (backend %s) vs ai-dynamo-runtime RadixTree, through Python; %d alternating runs: rates are medians, "
          "ratios the median of the ratios of adjacent runs"
          % (kvhash.__version__, kvhash.BACKEND, args.runs))
    print()
    print("| stream | apply_event, kvhash / Dynamo | kvhash blocks/s (MB/s of JSON) | Dynamo blocks/s "
          "| find_matches, kvhash / Dynamo | query p50 kvhash / Dynamo | digests |")
    print("|---|---|---|---|---|---|---|")
    ok = True
    for name in names:
        s = read_stream(os.path.join(args.streams, name + ".kvs"))
        runs: Dict[str, List[Run]] = {"kvhash": [], "dynamo": []}
        for _ in range(args.runs):
            runs["kvhash"].append(replay(make_kvhash(), s))
            runs["dynamo"].append(replay(make_dynamo(), s))
        med: Dict[str, Dict[str, float]] = {}
        for impl, rs in runs.items():
            med[impl] = {
                "apply": statistics.median(apply_rate(r) for r in rs),
                "mbps": statistics.median(r.apply_bytes / (r.apply_ns / 1e3) for r in rs),
                "p50": statistics.median(percentile(r.match_lat, 50) for r in rs),
            }
        digests = {r.digest for rs in runs.values() for r in rs}
        agree = "agree" if len(digests) == 1 else "DIFFER"
        ok = ok and len(digests) == 1
        k, d = med["kvhash"], med["dynamo"]
        print("| %s | %.2fx | %.2fM (%.0f) | %.2fM | %.2fx | %.1f / %.1f us | %s |" % (
            name, paired_ratio(runs, apply_rate), k["apply"] / 1e6, k["mbps"], d["apply"] / 1e6,
            paired_ratio(runs, match_rate), k["p50"] / 1e3, d["p50"] / 1e3, agree))
        sys.stdout.flush()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
