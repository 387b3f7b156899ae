"""Reading an engine command line: its environment prefix, which engine it
starts, and its ``--flag`` occurrences."""

from __future__ import annotations

import os
import re
from typing import Dict, List, Optional, Sequence, Tuple


def split_env(argv: Sequence[str]) -> Tuple[Dict[str, Optional[str]], bool, List[str]]:
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
    _, _, rest = split_env(argv)
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


class Flags:
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
