"""``python -m kvhash doctor --events tcp://HOST:PORT``: the live doctor.

It runs ``kvrouter doctor`` (the Go binary), which subscribes to the engine's
KV events and recomputes its root block ids under every engine hash scheme
kvrouter knows. Running the binary keeps one implementation of those schemes
(router/enginehash) rather than a second one in Python, and needs no ZeroMQ
or MessagePack package in the wheel. The binary is found, in order, at:

1. ``$KVHASH_KVROUTER`` (a path to the binary),
2. ``kvrouter`` on ``PATH``,
3. ``build/bin/kvrouter`` of the repository this package runs from
   (``make kvrouter`` builds it).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Optional, Sequence

#: Exit status when the binary cannot be found or run (as for bad usage).
EXIT_NO_BINARY = 2

ENV_VAR = "KVHASH_KVROUTER"


def find_kvrouter() -> Optional[str]:
    """The kvrouter binary to run, or None (see the module doc for the order)."""
    explicit = os.environ.get(ENV_VAR)
    if explicit:
        return explicit
    on_path = shutil.which("kvrouter")
    if on_path:
        return on_path
    # python/src/kvhash/_doctor/live.py -> the repository root is parents[4].
    repo_bin = Path(__file__).resolve().parents[4] / "build" / "bin" / "kvrouter"
    if repo_bin.is_file() and os.access(repo_bin, os.X_OK):
        return str(repo_bin)
    return None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m kvhash doctor --events",
        description="Subscribe to one engine's KV events and report whether its block ids are "
        "deterministic (verified), random per process (unstable) or undecided, with the engine "
        "flags to fix. Runs `kvrouter doctor` (found via $%s, then PATH, then the repository's "
        "build/bin). Exit status: 0 verified, 1 unstable, 3 nothing seen or unverifiable, "
        "2 bad usage or no kvrouter binary." % ENV_VAR,
    )
    parser.add_argument("--events", required=True, help="the engine's KV event endpoint, tcp://HOST:PORT")
    parser.add_argument("--topic", default="", help="topic prefix (default: every topic)")
    parser.add_argument("--seconds", type=float, default=5.0, help="longest wait (ends earlier once decided)")
    parser.add_argument("--engine-hash", default="auto", help="auto, or SCHEME[:SEED] (sha256_cbor, sha256:0, ...)")
    parser.add_argument("--seeds", default="", help="comma-separated extra seeds auto tries (PYTHONHASHSEED values)")
    parser.add_argument("--block-size", type=int, default=0, help="the router's block size, to compare")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--verbose", action="store_true", help="log the subscriber's messages to stderr")
    return parser


def kvrouter_args(args: Sequence[str]) -> List[str]:
    """The ``kvrouter doctor`` arguments for this command line (argparse
    checks it first, so usage errors read the same as the other doctor's)."""
    ns = _parser().parse_args(list(args))
    out = ["doctor", "--events", ns.events, "--seconds", repr(ns.seconds), "--engine-hash", ns.engine_hash]
    if ns.topic:
        out += ["--topic", ns.topic]
    if ns.seeds:
        out += ["--seeds", ns.seeds]
    if ns.block_size:
        out += ["--block-size", str(ns.block_size)]
    if ns.json:
        out.append("--json")
    if ns.verbose:
        out.append("--verbose")
    return out


def main(args: Sequence[str]) -> int:
    """Run the live doctor; its exit status."""
    forwarded = kvrouter_args(args)
    binary = find_kvrouter()
    if binary is None:
        sys.stderr.write(
            "python -m kvhash doctor: the live doctor runs the kvrouter binary, which was not found: "
            "set %s to its path, put it on PATH, or build it (make kvrouter -> build/bin/kvrouter)\n" % ENV_VAR
        )
        return EXIT_NO_BINARY
    try:
        done = subprocess.run([binary, *forwarded], check=False)
    except OSError as err:
        sys.stderr.write("python -m kvhash doctor: cannot run %s: %s\n" % (binary, err))
        return EXIT_NO_BINARY
    return done.returncode
