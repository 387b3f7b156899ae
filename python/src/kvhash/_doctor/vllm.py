"""vLLM's rules: prefix caching, KV events, the prefix-caching hash
algorithm with ``PYTHONHASHSEED``, and the block size."""

from __future__ import annotations

from typing import Dict, Mapping, Optional

from .cmdline import Flags
from .common import check_block_size, check_kv_events_json, hashseed_state, report_invalid_hashseed, truthy
from .configfile import read_text, scan_keys
from .findings import Report

_DETERMINISTIC_ALGOS = ("sha256", "sha256_cbor")
_RANDOM_ROOT_ALGOS = ("xxhash", "xxhash_cbor")


def check(r: Report, flags: Flags, env: Mapping[str, str], router_block_size: Optional[int]) -> None:
    # vLLM's --config YAML holds the same keys as the flags; flags win.
    file_values: Dict[str, str] = {}
    config_path = flags.value("config")
    if config_path:
        try:
            file_values = scan_keys(
                read_text(config_path),
                [
                    "enable_prefix_caching",
                    "enable-prefix-caching",
                    "prefix_caching_hash_algo",
                    "prefix-caching-hash-algo",
                    "block_size",
                    "block-size",
                ],
            )
        except OSError as e:
            r.add(
                "config-file-unreadable",
                "warning",
                "cannot read --config %s (%s): its settings were not checked." % (config_path, e.strerror),
                "run the doctor where the file is readable",
            )

    def from_file(key: str) -> Optional[str]:
        return file_values.get(key, file_values.get(key.replace("_", "-")))

    # 1. prefix caching (on by default in vLLM V1).
    hit = flags.last("enable-prefix-caching", "no-enable-prefix-caching")
    if hit is not None:
        name, inline, _ = hit
        enabled = name == "enable-prefix-caching"
        if inline is not None and truthy(inline) is False:
            enabled = not enabled
    else:
        enabled = truthy(from_file("enable_prefix_caching")) is not False
    if not enabled:
        r.add(
            "prefix-caching-off",
            "error",
            "prefix caching is disabled (--no-enable-prefix-caching): the engine reuses no "
            "blocks, so routing by cached prefix gains nothing.",
            "remove --no-enable-prefix-caching (or pass --enable-prefix-caching)",
        )

    # 2. KV events.
    check_kv_events_json(
        r, flags.value("kv-events-config"), flags.prefixed("kv-events-config"), "vllm", "--kv-events-config"
    )

    # 3. hash determinism.
    algo_raw = flags.value("prefix-caching-hash-algo") or from_file("prefix_caching_hash_algo")
    algo = algo_raw.strip().lower() if algo_raw else None
    state, seed = hashseed_state(env)
    seed_fix = "set PYTHONHASHSEED to the same integer (e.g. 0) in every engine process's environment"
    if state == "invalid":
        report_invalid_hashseed(r, seed, seed_fix)
    not_fixed = state in ("unset", "random")
    why = "unset" if state == "unset" else "\"random\""
    if algo == "builtin":
        if not_fixed:
            r.add(
                "hash-algo-builtin",
                "error",
                "--prefix-caching-hash-algo builtin names blocks with Python's hash(), which is "
                "randomized per process while PYTHONHASHSEED is %s." % why,
                "use --prefix-caching-hash-algo sha256_cbor (or sha256) and %s" % seed_fix,
            )
        else:
            r.add(
                "hash-algo-builtin",
                "warning",
                "--prefix-caching-hash-algo builtin (Python's 64-bit hash()) is stable only "
                "while every process has the same PYTHONHASHSEED, and newer vLLM removed it.",
                "use --prefix-caching-hash-algo sha256_cbor (or sha256)",
            )
    elif algo in _RANDOM_ROOT_ALGOS:
        if not_fixed:
            r.add(
                "hash-algo-random-root",
                "error",
                "--prefix-caching-hash-algo %s draws a random root hash per process while "
                "PYTHONHASHSEED is %s: restarted or parallel engines name the same blocks "
                "differently." % (algo, why),
                "%s, or use --prefix-caching-hash-algo sha256_cbor" % seed_fix,
            )
    elif algo is None or algo in _DETERMINISTIC_ALGOS:
        shown = algo or "sha256 (the default since 0.10.2; builtin before)"
        if state == "unset":
            r.add(
                "pythonhashseed-unset",
                "warning",
                "PYTHONHASHSEED is unset with hash algo %s: vLLM releases before mid-2026 draw a "
                "random root hash per process, so block ids differ between engines." % shown,
                seed_fix,
            )
        elif state == "random":
            r.add(
                "pythonhashseed-random",
                "warning",
                "PYTHONHASHSEED=random with hash algo %s: Python's hash() is randomized per "
                "process, and older releases fall back to it for the root hash." % shown,
                seed_fix,
            )
    else:
        r.add(
            "hash-algo-unknown",
            "warning",
            "unknown --prefix-caching-hash-algo %r: cannot tell whether its block ids are "
            "deterministic." % algo_raw,
            "use --prefix-caching-hash-algo sha256_cbor (or sha256)",
        )

    # 4. block size.
    raw_bs = flags.value("block-size") or from_file("block_size")
    check_block_size(r, "vllm", raw_bs, "--block-size", router_block_size)
