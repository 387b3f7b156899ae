"""``python -m kvhash doctor [--engine E] [--router-block-size N] [--json] -- CMD...``:
one line per finding (or a JSON list), exit status 1 when any is an error.
``python -m kvhash doctor --events tcp://HOST:PORT ...`` is the live doctor
(``live``)."""

from __future__ import annotations

import argparse
import json
from typing import List, Sequence

from .. import doctor


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not an integer" % text) from None
    if value <= 0:
        raise argparse.ArgumentTypeError("must be positive, got %d" % value)
    return value


def main(args: Sequence[str]) -> int:
    """Run the doctor on the command line after ``--``; the exit status.
    With ``--events`` (before any ``--``), the live doctor instead."""
    head = list(args[: list(args).index("--")]) if "--" in args else list(args)
    if any(a == "--events" or a.startswith("--events=") for a in head):
        from . import live

        return live.main(args)
    opts: List[str]
    command: List[str]
    if "--" in args:
        cut = list(args).index("--")
        opts, command = list(args[:cut]), list(args[cut + 1 :])
    else:
        opts, command = list(args), []
    parser = argparse.ArgumentParser(
        prog="python -m kvhash doctor",
        description="Report the engine settings that break hash-stable KV routing. "
        "Exit status 1 when any finding is an error.",
        usage="%(prog)s [--engine ENGINE] [--router-block-size N] [--json] -- ENGINE COMMAND LINE",
    )
    parser.add_argument("--engine", choices=doctor.ENGINES, help="the engine (default: detected from the command)")
    parser.add_argument("--router-block-size", type=_positive_int, help="the router's block size, to compare")
    parser.add_argument("--json", action="store_true", help="print the findings as a JSON list")
    parser.add_argument("command", nargs="*", help=argparse.SUPPRESS)
    ns = parser.parse_args(opts)
    command = list(ns.command) + command
    if not command:
        parser.error("give the engine's command line after --")
    findings = doctor.check(command, engine=ns.engine, router_block_size=ns.router_block_size)
    if ns.json:
        print(json.dumps([f.to_dict() for f in findings], indent=2))
    elif not findings:
        print("ok: no findings")
    else:
        for finding in findings:
            print(finding)
    return 1 if doctor.has_errors(findings) else 0
