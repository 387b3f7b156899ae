"""``python -m kvhash``: the engine doctor and version facts."""

from __future__ import annotations

import sys
from typing import List, Optional

# Plain text (this is what --help prints); each command has its own --help.
USAGE = """\
usage: python -m kvhash COMMAND [ARGS...]

commands:
  doctor [--engine vllm|sglang|trtllm] [--router-block-size N] [--json] -- CMD...
          check an engine command line for settings that break KV-aware routing
          (python -m kvhash doctor --help for details)
  doctor --events tcp://HOST:PORT [--seconds 5] [--engine-hash auto|SCHEME[:SEED]]
          subscribe to a running engine's KV events and report whether its block
          ids are deterministic (runs the kvrouter binary; docs/guides/engine-doctor.md)
  version print the kvhash version, hashing spec version, backend and whether
          the list-conversion extension is in use

options:
  -h, --help  print this help and exit
"""


def _version() -> int:
    import kvhash

    from . import _ints

    speedups = "on" if kvhash.SPEEDUPS else "off: " + _ints.unavailable_reason
    print(
        "kvhash %s (spec %s, backend %s, speedups %s)"
        % (kvhash.__version__, kvhash.SPEC_VERSION, kvhash.BACKEND, speedups)
    )
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "doctor":
        from ._doctor import cli

        return cli.main(args[1:])
    if args and args[0] == "version":
        return _version()
    if args and args[0] in ("-h", "--help", "help"):
        sys.stdout.write(USAGE)
        return 0
    problem = "unknown command %r" % args[0] if args else "a command is required"
    sys.stderr.write("python -m kvhash: %s\n\n%s" % (problem, USAGE))
    return 2


if __name__ == "__main__":
    sys.exit(main())
