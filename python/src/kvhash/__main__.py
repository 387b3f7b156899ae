"""``python -m kvhash``: the engine doctor and version facts.

    python -m kvhash doctor [--engine vllm|sglang|trtllm] [--router-block-size N] [--json] -- CMD...
    python -m kvhash version
"""

from __future__ import annotations

import sys
from typing import List, Optional


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
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
