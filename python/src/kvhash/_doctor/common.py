"""Rules and value readers that more than one engine uses: KV events
configured as JSON, the block size, ``PYTHONHASHSEED``."""

from __future__ import annotations

import json
import re
from typing import Any, Dict, Mapping, Optional, Tuple

from .findings import Report

# Engine defaults the block-size check falls back to when no flag is given.
DEFAULT_BLOCK_SIZE = {"vllm": 16, "sglang": 1, "trtllm": 32}


def truthy(value: Any) -> Optional[bool]:
    """A flag or config value read as a bool; None when it is neither."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return bool(value)
    if isinstance(value, str):
        v = value.strip().strip("'\"").lower()
        if v in ("1", "true", "yes", "on"):
            return True
        if v in ("0", "false", "no", "off", "none", "null"):
            return False
    return None


def hashseed_state(env: Mapping[str, str]) -> Tuple[str, Optional[str]]:
    """PYTHONHASHSEED -> ("unset" | "random" | "invalid" | "fixed", value)."""
    value = env.get("PYTHONHASHSEED")
    if value is None or value == "":
        return "unset", value
    if value == "random":
        return "random", value
    if re.fullmatch(r"\d+", value) and int(value) <= 4294967295:
        return "fixed", value
    return "invalid", value


def report_invalid_hashseed(r: Report, seed: Optional[str], fix: str) -> None:
    """The "pythonhashseed-invalid" finding (every engine runs on Python)."""
    r.add(
        "pythonhashseed-invalid",
        "error",
        "PYTHONHASHSEED=%r is neither \"random\" nor an integer in [0, 4294967295]: Python "
        "refuses to start." % seed,
        fix,
    )


def check_kv_events_json(
    r: Report, raw: Optional[str], dotted: Dict[str, Optional[str]], engine: str, flag: str
) -> None:
    example = (
        '%s \'{"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": "tcp://*:5557"}\''
        % flag
    )
    if raw is None and not dotted:
        r.add(
            "kv-events-off",
            "error",
            "%s publishes no KV events (no %s): the router never learns which blocks it caches."
            % (engine, flag),
            "add %s" % example,
        )
        return
    config: Dict[str, Any] = {}
    if raw is not None:
        try:
            parsed = json.loads(raw)
        except ValueError as e:
            r.add(
                "kv-events-config-invalid",
                "error",
                "%s is not valid JSON (%s): the engine refuses to start or ignores it." % (flag, e),
                "pass a JSON object, e.g. %s" % example,
            )
            return
        if not isinstance(parsed, dict):
            r.add(
                "kv-events-config-invalid",
                "error",
                "%s must be a JSON object, got %s." % (flag, type(parsed).__name__),
                "pass a JSON object, e.g. %s" % example,
            )
            return
        config.update(parsed)
    config.update({k: v for k, v in dotted.items()})
    # vLLM needs the explicit switch; SGLang publishes whenever the flag is given.
    if engine == "vllm" and truthy(config.get("enable_kv_cache_events")) is not True:
        r.add(
            "kv-events-off",
            "error",
            "%s does not set \"enable_kv_cache_events\": true, so vLLM publishes no KV events." % flag,
            "set \"enable_kv_cache_events\": true in %s" % flag,
        )
        return
    publisher = config.get("publisher")
    if isinstance(publisher, str) and publisher.strip().lower() == "null":
        r.add(
            "kv-events-publisher-null",
            "error",
            "%s sets \"publisher\": \"null\": events are produced but never sent." % flag,
            "set \"publisher\": \"zmq\" and an \"endpoint\" in %s" % flag,
        )
    elif publisher is None:
        r.add(
            "kv-events-publisher-default",
            "warning",
            "%s has no \"publisher\": some releases default to the \"null\" publisher, which "
            "sends nothing." % flag,
            "set \"publisher\": \"zmq\" explicitly in %s" % flag,
        )


def check_block_size(
    r: Report, engine: str, raw: Optional[str], source: str, router_block_size: Optional[int]
) -> None:
    engine_bs: Optional[int]
    if raw is not None:
        try:
            engine_bs = int(str(raw).strip().strip("'\""))
        except ValueError:
            r.add(
                "block-size-invalid",
                "error",
                "%s %r is not an integer block size." % (source, raw),
                "pass a positive integer to %s" % source,
            )
            return
        if engine_bs <= 0:
            r.add(
                "block-size-invalid",
                "error",
                "%s %d is not a positive block size." % (source, engine_bs),
                "pass a positive integer to %s" % source,
            )
            return
    else:
        engine_bs = None
    if router_block_size is None:
        r.add(
            "block-size-unchecked",
            "info",
            "the engine's block size (%s) was not compared with the router's."
            % (engine_bs if engine_bs is not None else "default %d" % DEFAULT_BLOCK_SIZE[engine]),
            "pass --router-block-size N (router_block_size=N) to check it",
        )
        return
    if engine_bs is not None:
        if engine_bs != router_block_size:
            r.add(
                "block-size-mismatch",
                "error",
                "engine block size %d (%s) differs from the router's %d: the router cannot "
                "index the engine's blocks." % (engine_bs, source, router_block_size),
                "use one block size everywhere: %s %d, or a router block size of %d"
                % (source, router_block_size, engine_bs),
            )
        return
    default = DEFAULT_BLOCK_SIZE[engine]
    if default != router_block_size:
        r.add(
            "block-size-mismatch",
            "error",
            "no %s given: the engine uses its default block size %d, the router %d."
            % (source, default, router_block_size),
            "pass %s %d to the engine" % (source, router_block_size),
        )
    else:
        r.add(
            "block-size-implicit",
            "warning",
            "no %s given: the engine's default (%d) matches the router today, but defaults "
            "change between releases and some attention backends pick another size."
            % (source, default),
            "pass %s %d explicitly" % (source, router_block_size),
        )
