"""TensorRT-LLM's rules: block reuse and the KV event buffer (from the LLM
API options file), and the tokens per block."""

from __future__ import annotations

from typing import Dict, Mapping, Optional

from .cmdline import Flags
from .common import check_block_size, hashseed_state, report_invalid_hashseed, truthy
from .configfile import read_text, scan_keys
from .findings import Report


def check(r: Report, flags: Flags, env: Mapping[str, str], router_block_size: Optional[int]) -> None:
    keys = ["enable_block_reuse", "event_buffer_max_size", "tokens_per_block"]
    values: Dict[str, str] = {}
    option_flags = ("extra-llm-api-options", "config", "extra-engine-args")
    path = flags.value(*option_flags)
    if path:
        try:
            values = scan_keys(read_text(path), keys)
        except OSError as e:
            r.add(
                "config-file-unreadable",
                "warning",
                "cannot read %s (%s): its kv_cache_config was not checked." % (path, e.strerror),
                "run the doctor where the file is readable",
            )
    if truthy(values.get("enable_block_reuse")) is False:
        r.add(
            "prefix-caching-off",
            "error",
            "kv_cache_config.enable_block_reuse is false: TensorRT-LLM reuses no blocks.",
            "set kv_cache_config.enable_block_reuse: true in the LLM API options file",
        )
    buffer = values.get("event_buffer_max_size")
    try:
        events_on = buffer is not None and int(buffer) > 0
    except ValueError:
        events_on = False
    # Dynamo's TensorRT-LLM launcher publishes events when asked to.
    if not events_on and not flags.present("publish-events-and-metrics"):
        r.add(
            "kv-events-off",
            "error",
            "kv_cache_config.event_buffer_max_size is not set above 0: TensorRT-LLM keeps no KV "
            "events to publish.",
            "set kv_cache_config.event_buffer_max_size (e.g. 1024) in the file passed with "
            "--extra_llm_api_options",
        )
    bs_flags = ("tokens-per-block", "kv-block-size", "kv-cache-block-size")
    raw_bs = flags.value(*bs_flags)
    hit = flags.last(*bs_flags)
    source = "--" + hit[0] if hit is not None else "tokens_per_block"
    if raw_bs is None and "tokens_per_block" in values:
        raw_bs, source = values["tokens_per_block"], "tokens_per_block"
    state, seed = hashseed_state(env)
    if state == "invalid":
        report_invalid_hashseed(r, seed, "unset PYTHONHASHSEED or set it to an integer")
    check_block_size(r, "trtllm", raw_bs, source, router_block_size)
