"""Reading the engine config files some flags name (vLLM's ``--config``,
TensorRT-LLM's LLM API options)."""

from __future__ import annotations

import json
import re
from typing import Dict, Sequence


def read_text(path: str) -> str:
    with open(path, "r", encoding="utf-8") as f:
        return f.read()


def scan_keys(text: str, keys: Sequence[str]) -> Dict[str, str]:
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
