"""Findings: what the doctor reports, and the report that collects them."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Dict, List, Sequence

SEVERITIES = ("error", "warning", "info")

#: Every finding id the doctor can report (docs/guides/engine-doctor.md).
FINDING_IDS = (
    "engine-unknown",
    "prefix-caching-off",
    "kv-events-off",
    "kv-events-config-invalid",
    "kv-events-publisher-null",
    "kv-events-publisher-default",
    "hash-algo-random-root",
    "hash-algo-builtin",
    "hash-algo-unknown",
    "pythonhashseed-unset",
    "pythonhashseed-random",
    "pythonhashseed-invalid",
    "block-size-mismatch",
    "block-size-implicit",
    "block-size-invalid",
    "block-size-unchecked",
    "config-file-unreadable",
)

_ORDER = {s: i for i, s in enumerate(SEVERITIES)}


@dataclass(frozen=True)
class Finding:
    """One problem: ``id`` (stable, documented), ``severity`` ("error",
    "warning" or "info"), what is wrong (``message``) and how to fix it
    (``fix``)."""

    id: str
    severity: str
    message: str
    fix: str

    def to_dict(self) -> Dict[str, str]:
        return asdict(self)

    def __str__(self) -> str:
        return "%-7s %s: %s Fix: %s" % (self.severity, self.id, self.message, self.fix)


class Report:
    """The findings of one check, in the order the rules found them."""

    def __init__(self) -> None:
        self.findings: List[Finding] = []

    def add(self, id: str, severity: str, message: str, fix: str) -> None:
        # Every id must be documented; a typo here would ship an undocumented one.
        assert id in FINDING_IDS and severity in SEVERITIES
        self.findings.append(Finding(id, severity, message, fix))

    def sorted(self) -> List[Finding]:
        """The findings, errors first (stable: rule order within a severity)."""
        return sorted(self.findings, key=lambda f: _ORDER[f.severity])


def has_errors(findings: Sequence[Finding]) -> bool:
    return any(f.severity == "error" for f in findings)
