"""Engine doctor: find the engine settings that break hash-stable KV routing.

A KV-aware router matches prompts against the blocks engines report in their
KV events. That only works when every engine process (1) caches prefixes,
(2) publishes KV events, (3) names blocks with ids that are the same in every
process (deterministic hash algorithm and ``PYTHONHASHSEED``), and (4) uses the
router's block size. This module reads an engine's command line and
environment and reports each setting that breaks one of those. It is pure
configuration analysis: no hashing.

    findings = kvhash.doctor.check(["vllm", "serve", "m", "--block-size", "32"],
                                   router_block_size=16)

``python -m kvhash doctor [--engine E] [--router-block-size N] [--json] -- CMD...``
prints one line per finding and exits 1 when any finding is an error.
Every finding id is documented in docs/guides/engine-doctor.md.

The rules live in ``kvhash._doctor`` (one module per engine); this module is
the public entry point.
"""

from __future__ import annotations

import os
from typing import Callable, Dict, List, Mapping, Optional, Sequence

from ._doctor import sglang, trtllm, vllm
from ._doctor.cmdline import Flags, detect_engine, split_env
from ._doctor.common import DEFAULT_BLOCK_SIZE as DEFAULT_BLOCK_SIZE
from ._doctor.findings import FINDING_IDS, SEVERITIES, Finding, Report
from ._doctor.findings import has_errors as has_errors

__all__ = ["Finding", "check", "detect_engine", "ENGINES", "SEVERITIES", "FINDING_IDS"]

ENGINES = ("vllm", "sglang", "trtllm")

_Rules = Callable[[Report, Flags, Mapping[str, str], Optional[int]], None]
_CHECKS: Dict[str, _Rules] = {"vllm": vllm.check, "sglang": sglang.check, "trtllm": trtllm.check}


def check(
    argv: Sequence[str],
    env: Optional[Mapping[str, str]] = None,
    engine: Optional[str] = None,
    router_block_size: Optional[int] = None,
) -> List[Finding]:
    """Findings for one engine command line, errors first.

    `argv`: the engine's command line (leading ``VAR=value`` / ``env``
    assignments are applied to the environment). `env`: the engine's
    environment (default: this process's). `engine`: "vllm", "sglang" or
    "trtllm" (default: detected from argv). `router_block_size`: the
    router's block size, to compare with the engine's."""
    if isinstance(argv, (str, bytes)):
        raise TypeError("argv must be a list of strings, not a single string")
    argv = [str(a) for a in argv]
    if engine is not None and engine not in ENGINES:
        raise ValueError("engine must be one of %s, not %r" % (", ".join(ENGINES), engine))
    if router_block_size is not None:
        if isinstance(router_block_size, bool) or not isinstance(router_block_size, int):
            raise TypeError("router_block_size must be an int")
        if router_block_size <= 0:
            raise ValueError("router_block_size must be positive, got %d" % router_block_size)
    overrides, clear, rest = split_env(argv)
    effective: Dict[str, str] = {} if clear else dict(os.environ if env is None else env)
    for name, value in overrides.items():
        if value is None:
            effective.pop(name, None)
        else:
            effective[name] = value
    report = Report()
    engine = engine or detect_engine(argv)
    if engine is None:
        report.add(
            "engine-unknown",
            "error",
            "cannot tell which engine %r starts, so nothing was checked." % " ".join(argv[:3]),
            "pass --engine vllm|sglang|trtllm (engine=...)",
        )
        return report.findings
    _CHECKS[engine](report, Flags(rest), effective, router_block_size)
    return report.sorted()
