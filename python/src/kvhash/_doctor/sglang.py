"""SGLang's rules: the radix (prefix) cache, KV events, and the page size."""

from __future__ import annotations

from typing import Mapping, Optional

from .cmdline import Flags
from .common import check_block_size, check_kv_events_json, hashseed_state, report_invalid_hashseed
from .findings import Report


def check(r: Report, flags: Flags, env: Mapping[str, str], router_block_size: Optional[int]) -> None:
    if flags.present("disable-radix-cache"):
        r.add(
            "prefix-caching-off",
            "error",
            "--disable-radix-cache turns SGLang's prefix cache off: no blocks are reused or "
            "reported.",
            "remove --disable-radix-cache",
        )
    check_kv_events_json(
        r, flags.value("kv-events-config"), flags.prefixed("kv-events-config"), "sglang", "--kv-events-config"
    )
    # SGLang's block ids (sha256 chain; hash() of int tuples before) do not
    # depend on PYTHONHASHSEED, so only an unusable value matters.
    state, seed = hashseed_state(env)
    if state == "invalid":
        report_invalid_hashseed(r, seed, "unset PYTHONHASHSEED or set it to an integer")
    check_block_size(r, "sglang", flags.value("page-size"), "--page-size", router_block_size)
