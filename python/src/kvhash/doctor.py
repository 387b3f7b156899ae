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
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

__all__ = ["Finding", "check", "detect_engine", "ENGINES", "SEVERITIES", "FINDING_IDS"]

ENGINES = ("vllm", "sglang", "trtllm")
SEVERITIES = ("error", "warning", "info")

#: Every finding id this module can report (docs/guides/engine-doctor.md).
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

# Engine defaults the block-size check falls back to when no flag is given.
DEFAULT_BLOCK_SIZE = {"vllm": 16, "sglang": 1, "trtllm": 32}

_VLLM_DETERMINISTIC_ALGOS = ("sha256", "sha256_cbor")
_VLLM_RANDOM_ROOT_ALGOS = ("xxhash", "xxhash_cbor")


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


# -- command line ------------------------------------------------------------


def _split_env(argv: Sequence[str]) -> Tuple[Dict[str, Optional[str]], bool, List[str]]:
    """Leading environment assignments (``A=1 cmd``, ``env [-i] [-u X] A=1
    cmd``) -> (overrides, clear_env, rest). An override of None unsets."""
    overrides: Dict[str, Optional[str]] = {}
    clear = False
    rest = list(argv)
    assign = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
    while rest:
        tok = rest[0]
        base = os.path.basename(tok)
        if assign.match(tok):
            name, _, value = tok.partition("=")
            overrides[name] = value
            rest.pop(0)
        elif base == "env":
            rest.pop(0)
            while rest and rest[0].startswith("-"):
                opt = rest.pop(0)
                if opt in ("-i", "--ignore-environment", "-"):
                    clear = True
                    overrides.clear()
                elif opt in ("-u", "--unset") and rest:
                    overrides[rest.pop(0)] = None
                elif opt.startswith("--unset="):
                    overrides[opt.split("=", 1)[1]] = None
                elif opt == "--":
                    break
        elif base in ("exec", "nohup", "time", "command"):
            rest.pop(0)
        else:
            break
    return overrides, clear, rest


def _module_after_m(argv: Sequence[str]) -> Optional[Tuple[int, str]]:
    for i, tok in enumerate(argv):
        if tok == "-m":
            if i + 1 < len(argv):
                return i + 1, argv[i + 1]
            return None
        if tok.startswith("-m") and len(tok) > 2 and not tok.startswith("--"):
            return i, tok[2:]
    return None


def detect_engine(argv: Sequence[str]) -> Optional[str]:
    """The engine a command line starts ("vllm", "sglang", "trtllm"), or None.

    Recognized: ``vllm serve``, ``python -m vllm.entrypoints...``,
    ``python -m sglang.launch_server``, ``sglang serve``, ``trtllm-serve``,
    ``python -m tensorrt_llm...``, and Dynamo's launchers ``python -m
    dynamo.vllm|dynamo.sglang|dynamo.trtllm`` (which take the engine's flags),
    after any leading ``env``/``VAR=value`` and wrappers such as ``uv run``,
    ``mpirun ...`` or ``torchrun ...``."""
    _, _, rest = _split_env(argv)
    found = _module_after_m(rest)
    if found is not None:
        module = found[1]
        for prefix, engine in (
            ("vllm", "vllm"),
            ("dynamo.vllm", "vllm"),
            ("sglang", "sglang"),
            ("dynamo.sglang", "sglang"),
            ("tensorrt_llm", "trtllm"),
            ("dynamo.trtllm", "trtllm"),
        ):
            if module == prefix or module.startswith(prefix + "."):
                return engine
    for i, tok in enumerate(rest):
        if tok.startswith("-"):
            continue
        base = os.path.basename(tok)
        nxt = rest[i + 1] if i + 1 < len(rest) else ""
        if base == "vllm" and nxt == "serve":
            return "vllm"
        if base == "sglang" and nxt == "serve":
            return "sglang"
        if base == "trtllm-serve":
            return "trtllm"
    return None


def _norm_flag(name: str) -> str:
    return name.lower().replace("_", "-")


class _Flags:
    """The ``--flag`` occurrences of a command line (names normalized:
    lowercase, ``_`` -> ``-``). Values are taken from ``--flag=value`` or the
    next token when it does not start with ``-``; argparse semantics: the
    last occurrence wins."""

    def __init__(self, argv: Sequence[str]) -> None:
        self.items: List[Tuple[str, Optional[str], Optional[str]]] = []
        for i, tok in enumerate(argv):
            if not tok.startswith("--") or tok == "--":
                continue
            name, eq, inline = tok[2:].partition("=")
            nxt = argv[i + 1] if i + 1 < len(argv) else None
            if nxt is not None and nxt.startswith("-") and not re.match(r"^-\d", nxt):
                nxt = None
            self.items.append((_norm_flag(name), inline if eq else None, nxt))

    def last(self, *names: str) -> Optional[Tuple[str, Optional[str], Optional[str]]]:
        """The last occurrence of any of `names`: (name, inline value, next token)."""
        wanted = {_norm_flag(n) for n in names}
        hit = None
        for item in self.items:
            if item[0] in wanted:
                hit = item
        return hit

    def value(self, *names: str) -> Optional[str]:
        hit = self.last(*names)
        if hit is None:
            return None
        return hit[1] if hit[1] is not None else hit[2]

    def present(self, *names: str) -> bool:
        return self.last(*names) is not None

    def prefixed(self, prefix: str) -> Dict[str, Optional[str]]:
        """``--prefix.key value`` flags (vLLM's dotted config syntax) -> {key: value}."""
        out: Dict[str, Optional[str]] = {}
        p = _norm_flag(prefix) + "."
        for name, inline, nxt in self.items:
            if name.startswith(p):
                out[name[len(p):].replace("-", "_")] = inline if inline is not None else nxt
        return out


def _truthy(value: Any) -> Optional[bool]:
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


# -- config files ---------------------------------------------------------------


def _read_text(path: str) -> str:
    with open(path, "r", encoding="utf-8") as f:
        return f.read()


def _scan_keys(text: str, keys: Sequence[str]) -> Dict[str, str]:
    """Values of `keys` anywhere in a JSON or YAML document (block or flow
    style), last one winning. A deliberately small reader: no YAML dependency;
    the keys we look for are unique leaf keys in these files."""
    found: Dict[str, str] = {}
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if doc is not None:
        stack = [doc]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                for k, v in node.items():
                    if k in keys and not isinstance(v, (dict, list)):
                        found[k] = json.dumps(v) if not isinstance(v, str) else v
                    stack.append(v)
            elif isinstance(node, list):
                stack.extend(node)
        return found
    for key in keys:
        for m in re.finditer(
            r"""(?m)(?:^|[\s{,])["']?%s["']?\s*:\s*("[^"]*"|'[^']*'|[^,}\s#]+)""" % re.escape(key), text
        ):
            found[key] = m.group(1).strip("'\"")
    return found


# -- environment -----------------------------------------------------------------


def _hashseed_state(env: Mapping[str, str]) -> Tuple[str, Optional[str]]:
    """PYTHONHASHSEED -> ("unset" | "random" | "invalid" | "fixed", value)."""
    value = env.get("PYTHONHASHSEED")
    if value is None or value == "":
        return "unset", value
    if value == "random":
        return "random", value
    if re.fullmatch(r"\d+", value) and int(value) <= 4294967295:
        return "fixed", value
    return "invalid", value


# -- checks per engine ---------------------------------------------------------------


class _Report:
    def __init__(self) -> None:
        self.findings: List[Finding] = []

    def add(self, id: str, severity: str, message: str, fix: str) -> None:
        assert id in FINDING_IDS and severity in SEVERITIES
        self.findings.append(Finding(id, severity, message, fix))


def _check_kv_events_json(
    r: _Report, raw: Optional[str], dotted: Dict[str, Optional[str]], engine: str, flag: str
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
    if engine == "vllm" and _truthy(config.get("enable_kv_cache_events")) is not True:
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


def _check_block_size(
    r: _Report, engine: str, raw: Optional[str], source: str, router_block_size: Optional[int]
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


def _check_vllm(r: _Report, flags: _Flags, env: Mapping[str, str], router_block_size: Optional[int]) -> None:
    # vLLM's --config YAML holds the same keys as the flags; flags win.
    file_values: Dict[str, str] = {}
    config_path = flags.value("config")
    if config_path:
        try:
            file_values = _scan_keys(
                _read_text(config_path),
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
        if inline is not None and _truthy(inline) is False:
            enabled = not enabled
    else:
        enabled = _truthy(from_file("enable_prefix_caching")) is not False
    if not enabled:
        r.add(
            "prefix-caching-off",
            "error",
            "prefix caching is disabled (--no-enable-prefix-caching): the engine reuses no "
            "blocks, so routing by cached prefix gains nothing.",
            "remove --no-enable-prefix-caching (or pass --enable-prefix-caching)",
        )

    # 2. KV events.
    _check_kv_events_json(
        r, flags.value("kv-events-config"), flags.prefixed("kv-events-config"), "vllm", "--kv-events-config"
    )

    # 3. hash determinism.
    algo_raw = flags.value("prefix-caching-hash-algo") or from_file("prefix_caching_hash_algo")
    algo = algo_raw.strip().lower() if algo_raw else None
    state, seed = _hashseed_state(env)
    seed_fix = "set PYTHONHASHSEED to the same integer (e.g. 0) in every engine process's environment"
    if state == "invalid":
        r.add(
            "pythonhashseed-invalid",
            "error",
            "PYTHONHASHSEED=%r is neither \"random\" nor an integer in [0, 4294967295]: Python "
            "refuses to start." % seed,
            seed_fix,
        )
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
    elif algo in _VLLM_RANDOM_ROOT_ALGOS:
        if not_fixed:
            r.add(
                "hash-algo-random-root",
                "error",
                "--prefix-caching-hash-algo %s draws a random root hash per process while "
                "PYTHONHASHSEED is %s: restarted or parallel engines name the same blocks "
                "differently." % (algo, why),
                "%s, or use --prefix-caching-hash-algo sha256_cbor" % seed_fix,
            )
    elif algo is None or algo in _VLLM_DETERMINISTIC_ALGOS:
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
    _check_block_size(r, "vllm", raw_bs, "--block-size", router_block_size)


def _check_sglang(r: _Report, flags: _Flags, env: Mapping[str, str], router_block_size: Optional[int]) -> None:
    if flags.present("disable-radix-cache"):
        r.add(
            "prefix-caching-off",
            "error",
            "--disable-radix-cache turns SGLang's prefix cache off: no blocks are reused or "
            "reported.",
            "remove --disable-radix-cache",
        )
    _check_kv_events_json(
        r, flags.value("kv-events-config"), flags.prefixed("kv-events-config"), "sglang", "--kv-events-config"
    )
    # SGLang's block ids (sha256 chain; hash() of int tuples before) do not
    # depend on PYTHONHASHSEED, so only an unusable value matters.
    state, seed = _hashseed_state(env)
    if state == "invalid":
        r.add(
            "pythonhashseed-invalid",
            "error",
            "PYTHONHASHSEED=%r is neither \"random\" nor an integer in [0, 4294967295]: Python "
            "refuses to start." % seed,
            "unset PYTHONHASHSEED or set it to an integer",
        )
    _check_block_size(r, "sglang", flags.value("page-size"), "--page-size", router_block_size)


def _check_trtllm(r: _Report, flags: _Flags, env: Mapping[str, str], router_block_size: Optional[int]) -> None:
    keys = ["enable_block_reuse", "event_buffer_max_size", "tokens_per_block"]
    values: Dict[str, str] = {}
    option_flags = ("extra-llm-api-options", "config", "extra-engine-args")
    path = flags.value(*option_flags)
    if path:
        try:
            values = _scan_keys(_read_text(path), keys)
        except OSError as e:
            r.add(
                "config-file-unreadable",
                "warning",
                "cannot read %s (%s): its kv_cache_config was not checked." % (path, e.strerror),
                "run the doctor where the file is readable",
            )
    if _truthy(values.get("enable_block_reuse")) is False:
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
    state, seed = _hashseed_state(env)
    if state == "invalid":
        r.add(
            "pythonhashseed-invalid",
            "error",
            "PYTHONHASHSEED=%r is neither \"random\" nor an integer in [0, 4294967295]: Python "
            "refuses to start." % seed,
            "unset PYTHONHASHSEED or set it to an integer",
        )
    _check_block_size(r, "trtllm", raw_bs, source, router_block_size)


_CHECKS = {"vllm": _check_vllm, "sglang": _check_sglang, "trtllm": _check_trtllm}
_ORDER = {s: i for i, s in enumerate(SEVERITIES)}


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
    overrides, clear, rest = _split_env(argv)
    effective: Dict[str, str] = {} if clear else dict(os.environ if env is None else env)
    for name, value in overrides.items():
        if value is None:
            effective.pop(name, None)
        else:
            effective[name] = value
    report = _Report()
    engine = engine or detect_engine(argv)
    if engine is None:
        report.add(
            "engine-unknown",
            "error",
            "cannot tell which engine %r starts, so nothing was checked." % " ".join(argv[:3]),
            "pass --engine vllm|sglang|trtllm (engine=...)",
        )
        return report.findings
    _CHECKS[engine](report, _Flags(rest), effective, router_block_size)
    return sorted(report.findings, key=lambda f: _ORDER[f.severity])


def has_errors(findings: Sequence[Finding]) -> bool:
    return any(f.severity == "error" for f in findings)
