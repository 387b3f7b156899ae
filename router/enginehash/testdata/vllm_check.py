"""Check the committed vLLM vectors against vLLM's own source code.

    python vllm_check.py --vllm-dir DIR [--vectors vectors.json]

DIR holds files of an unpacked vLLM wheel (``pip download vllm --no-deps``,
then unzip ``vllm/utils/hashing.py`` and ``vllm/v1/core/kv_cache_utils.py``;
``make enginehash-vllm-check`` does both). Those two modules are loaded as
they are; the rest of vLLM (config, torch, multimodal processing) is replaced
by empty stand-ins, which is safe because prompt hashing from token 0 never
reaches it. For every vLLM chain in the vectors this runs vLLM's own
``init_none_hash`` (with PYTHONHASHSEED set to the vector's seed, or unset for
the default seed), ``get_request_block_hasher`` on a stand-in request, and
``maybe_convert_block_hash`` for the event int, and compares the digests and
ints. It also checks that ``to_event_extra_keys`` publishes the untagged keys
the vectors list. Exit status 1 on any mismatch.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import types
from typing import Any, Dict, List, Optional

Json = Dict[str, Any]

VLLM_ALGOS = {
    "vllm-sha256": "sha256",
    "vllm-sha256-cbor": "sha256_cbor",
    "vllm-xxhash": "xxhash",
    "vllm-xxhash-cbor": "xxhash_cbor",
}
GOLDEN = 2654435761


class _Anything:
    """Stands in for any vLLM class kv_cache_utils imports but prompt hashing
    never uses."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything


def _load(name: str, path: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_kv_cache_utils(vllm_dir: str) -> types.ModuleType:
    for name in [
        "vllm",
        "vllm.config",
        "vllm.multimodal",
        "vllm.multimodal.utils",
        "vllm.utils",
        "vllm.utils.math_utils",
        "vllm.v1",
        "vllm.v1.core",
        "vllm.v1.kv_cache_interface",
        "vllm.v1.kv_cache_spec_registry",
        "vllm.v1.request",
        "vllm.v1.utils",
    ]:
        sys.modules[name] = _StubModule(name)
    envs = types.ModuleType("vllm.envs")
    setattr(envs, "VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES", True)
    sys.modules["vllm.envs"] = envs
    setattr(sys.modules["vllm"], "envs", envs)
    logger = types.ModuleType("vllm.logger")
    setattr(logger, "init_logger", lambda name: __import__("logging").getLogger(name))
    sys.modules["vllm.logger"] = logger
    _load("vllm.utils.hashing", os.path.join(vllm_dir, "vllm", "utils", "hashing.py"))
    return _load("vllm.v1.core.kv_cache_utils", os.path.join(vllm_dir, "vllm", "v1", "core", "kv_cache_utils.py"))


class _Position:
    def __init__(self, offset: int, length: int) -> None:
        self.offset = offset
        self.length = length


class _MMFeature:
    def __init__(self, identifier: str, offset: int, length: int) -> None:
        self.identifier = identifier
        self.mm_position = _Position(offset, length)


class _LoRA:
    def __init__(self, name: str, path: str) -> None:
        self.lora_name = name
        self.lora_path = path


class _Request:
    """The attributes of vllm.v1.request.Request that block hashing reads."""

    def __init__(self, tokens: List[int], extras: Json, block_size: int) -> None:
        self.all_token_ids = tokens
        self.num_tokens = len(tokens)
        self.block_hashes: List[bytes] = []
        self.mm_features = [_MMFeature(str(i), int(o), int(n)) for i, o, n in extras.get("mm", [])]
        self.lora_request = _LoRA(extras["lora"], extras.get("lora_path", "")) if extras.get("lora") else None
        self.cache_salt: Optional[str] = extras.get("salt") or None
        self.prompt_embeds: Any = None
        self._prompt_embeds_per_block_hashes: Dict[Any, bytes] = {}
        if "embeds" in extras:
            # vLLM caches each block's embeds digest on the request; filling
            # that cache means the tensor itself is never needed.
            self.prompt_embeds = object()
            for b, digest in enumerate(extras["embeds"]):
                rng = (b * block_size, (b + 1) * block_size)
                self._prompt_embeds_per_block_hashes[rng] = bytes.fromhex(digest)


def check(kvu: types.ModuleType, case: Json) -> List[str]:
    errors: List[str] = []
    extras: Json = case.get("extras") or {}
    seed: str = case["seed"]
    if seed == kvu.DEFAULT_NONE_HASH_SEED and not case["scheme"].startswith("vllm-xxhash"):
        os.environ.pop("PYTHONHASHSEED", None)  # the fixed default, as deployed
    else:
        os.environ["PYTHONHASHSEED"] = seed
    hash_fn = sys.modules["vllm.utils.hashing"].get_hash_fn_by_name(VLLM_ALGOS[case["scheme"]])
    kvu.init_none_hash(hash_fn)
    if kvu.NONE_HASH.hex() != case["root"]:
        errors.append(f"root {kvu.NONE_HASH.hex()} != {case['root']}")
    if "tokens_golden" in case:
        tokens = [(i * GOLDEN) % 2**32 for i in range(int(case["tokens_golden"]))]
    else:
        tokens = [int(t) for t in case["tokens"]]
    size = int(case["block_size"])
    request = _Request(tokens, extras, size)
    hasher = kvu.get_request_block_hasher(size, hash_fn, int(extras.get("lookahead", 0)))
    hashes = hasher(request)
    if len(hashes) != len(case["blocks"]):
        return errors + [f"{len(hashes)} blocks != {len(case['blocks'])}"]
    for i, (got, want) in enumerate(zip(hashes, case["blocks"])):
        if got.hex() != want["digest"]:
            errors.append(f"block {i}: digest {got.hex()} != {want['digest']}")
        if kvu.maybe_convert_block_hash(got) != want["event_int"]:
            errors.append(f"block {i}: event int differs")
    return errors


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vllm-dir", required=True)
    parser.add_argument("--vectors", default=os.path.join(os.path.dirname(__file__), "vectors.json"))
    args = parser.parse_args(argv)
    kvu = load_kv_cache_utils(args.vllm_dir)
    with open(args.vectors, encoding="utf-8") as f:
        chains: List[Json] = json.load(f)["chains"]
    checked = skipped = 0
    failed: List[str] = []
    for case in chains:
        if case["scheme"] not in VLLM_ALGOS:
            continue
        extras: Json = case.get("extras") or {}
        has_keys = any(b["extra_keys"] for b in case["blocks"])
        # This vLLM hashes its own key form only: untagged vectors with keys
        # are for earlier releases.
        if has_keys and not extras.get("tagged"):
            skipped += 1
            continue
        errs = check(kvu, case)
        checked += 1
        if errs:
            failed.append(f"{case['name']}: " + "; ".join(errs[:3]))
    # The events publish the untagged form of the tagged keys.
    published = kvu.to_event_extra_keys([(("lora", "n", "/p"), ("mm", "id", 3), ("cache_salt", "s"), ("prompt_embeds", b"d")), None])
    if published != [("n", ("id", 3), "s", b"d"), None]:
        failed.append(f"to_event_extra_keys gave {published!r}")
    for line in failed:
        print("MISMATCH", line)
    print(f"vllm_check: {checked} chains checked against vLLM's source, {skipped} untagged-key chains skipped, {len(failed)} mismatches")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
