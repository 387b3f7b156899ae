"""Replays a Mooncake trace in Dynamo's own simulator (DynoSim, from the
ai-dynamo-runtime wheel) and prints one JSON line of its summary per router
mode: the reference that router/sim's TestAgreesWithDynoSim compares to.

Usage: python dynosim_replay.py TRACE SPEEDUP MODE[,MODE...]
"""

import json
import os
import sys

os.environ.setdefault("RUST_LOG", "error")

import dynamo._core as core  # noqa: E402  (after RUST_LOG: the wheel reads it once)


def main() -> None:
    trace, speedup, modes = sys.argv[1], float(sys.argv[2]), sys.argv[3].split(",")
    for mode in modes:
        result = core.run_mocker_trace_replay(
            [trace], num_workers=8, router_mode=mode, trace_block_size=512, arrival_speedup_ratio=speedup
        )
        s = result.summary
        print(json.dumps({
            "mode": mode,
            "reuse": s["prefix_cache_reused_ratio"],
            "mean_ttft_ms": s["mean_ttft_ms"],
            "p90_ttft_ms": s["p90_ttft_ms"],
        }), flush=True)


if __name__ == "__main__":
    main()
