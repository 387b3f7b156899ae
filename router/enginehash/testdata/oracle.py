"""Independent oracle for router/enginehash: engines' own block hashes.

    python oracle.py generate > vectors.json    (the committed vectors)
    python oracle.py batch < cases.json         (the Go property cross-check)
    python oracle.py serve                      (one case a line in, one result a line out: the Go fuzz target)

Nothing here shares code with the Go package. The serializations are
CPython's own ``pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)`` and
``cbor2.dumps(obj, canonical=True)``, the hashes ``hashlib.sha256`` and
``xxhash.xxh3_128_digest``: the functions vLLM's ``vllm/utils/hashing.py``
calls. The rest restates, in this file's own code, the engines' rules as
their sources state them:

- vLLM: NONE_HASH = hash_fn(seed string); a block's digest is
  hash_fn((parent_digest, tuple(tokens), extra_keys or None)); extra keys are
  LoRA name, multimodal (identifier, offset - block_start), cache salt on the
  first block, prompt-embeds digest, in that order; the event int is
  int.from_bytes(digest, "big") & (2**64 - 1).
- SGLang: sha256(prior digest (if any) || each token as 4 bytes little
  endian); a salted chain's prior is sha256(b"sglang-cache-salt-v1\\0" +
  salt); the event int is the first 8 bytes as a signed big-endian int.
- TensorRT-LLM v1_block_key (its default): a 64-bit mix of the block
  length, parent key (0 at the root), salt id (root only), each token and
  the LoRA task id, as kv_cache_hash.hash_v1_block_key states it; the key is
  the event int.
- TensorRT-LLM v2_sha256: root = sha256(mask byte || present scope fields
  as u64 LE) for ReuseScope(lora_id, salt); block = sha256(parent || each
  token as u64 LE); salt id = first 8 bytes of sha256(salt), little endian;
  the event int is the first 8 bytes, big endian, unsigned.

Every random input comes from random.Random with a fixed seed, so
``generate`` is byte-identical from run to run (the Go drift test checks it).
Case JSON (input of batch, and each entry of generate's "chains"):

    {"scheme": "vllm-sha256" | "vllm-sha256-cbor" | "vllm-xxhash" |
               "vllm-xxhash-cbor" | "sglang-sha256" | "trtllm-v2-sha256" | "trtllm-v1-block-key",
     "seed": "<vLLM seed string>",          (vLLM)
     "salt": "<cache salt>",                (SGLang, TensorRT-LLM; optional)
     "lora_id": <u64>,                      (TensorRT-LLM; optional)
     "eagle": true,                         (SGLang's EAGLE bigram keys; optional)
     "block_size": N, "tokens": [u32...]  or  "tokens_golden": <count>,
     "extras": {"lora": str, "lora_path": str, "salt": str,
                "mm": [[id, offset, length]...], "embeds": [hex per block],
                "tagged": bool, "lookahead": int}  (vLLM; optional)}

and its result adds "root" (hex, "" for SGLang's unsalted root) and
"blocks": [{"extra_keys": [...] | null, "digest": hex, "event_int": int,
"tagged": true (if so), "lookahead": [tokens] (if so)}] where each extra key
is {"lora": name, "path": path} | {"mm": [id, offset]} | {"salt": s} |
{"embeds": hex}. "tagged" is vLLM 0.33's key form (("lora", name, path),
("mm", id, offset), ("cache_salt", salt), ("prompt_embeds", digest));
"lookahead" is its num_hash_lookahead_tokens (keys become (keys, *tokens)).
"tokens_golden": n stands for tokens[i] = (i * 2654435761) mod 2**32, used
for blocks too large to spell out.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import pickle
import random
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import cbor2
import xxhash

Json = Dict[str, Any]
HashFn = Callable[[Any], bytes]

DEFAULT_VLLM_SEED = "vllm-none-hash"
SGLANG_SALT_TAG = b"sglang-cache-salt-v1\x00"
U32 = 2**32
GOLDEN = 2654435761


def _pickle_bytes(obj: Any) -> bytes:
    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def _cbor_bytes(obj: Any) -> bytes:
    return cbor2.dumps(obj, canonical=True)


VLLM_HASH_FNS: Dict[str, HashFn] = {
    "vllm-sha256": lambda o: hashlib.sha256(_pickle_bytes(o)).digest(),
    "vllm-sha256-cbor": lambda o: hashlib.sha256(_cbor_bytes(o)).digest(),
    "vllm-xxhash": lambda o: xxhash.xxh3_128_digest(_pickle_bytes(o)),
    "vllm-xxhash-cbor": lambda o: xxhash.xxh3_128_digest(_cbor_bytes(o)),
}


def use_vllm_hashing(path: str) -> None:
    """Swap in vLLM's own sha256 / sha256_cbor / xxhash / xxhash_cbor, loaded
    from one file: vllm/utils/hashing.py imports only hashlib, pickle, cbor2
    and xxhash, so it loads without the rest of vLLM (or torch)."""
    spec = importlib.util.spec_from_file_location("vllm_hashing", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for scheme, name in [
        ("vllm-sha256", "sha256"),
        ("vllm-sha256-cbor", "sha256_cbor"),
        ("vllm-xxhash", "xxhash"),
        ("vllm-xxhash-cbor", "xxhash_cbor"),
    ]:
        VLLM_HASH_FNS[scheme] = module.get_hash_fn_by_name(name)


def fresh_str(s: str) -> str:
    """A str object that is not shared with any other key, as a request's
    strings are (CPython's cached one-character and empty strings excepted,
    which pickle's memo then shows: exactly what the engine would do)."""
    out: str = json.loads(json.dumps(s))
    return out


# A semantic key: (kind, value, ...) with kind "lora" (name, path), "mm"
# (identifier, offset in block), "salt" (salt) or "embeds" (digest).
Key = Tuple[Any, ...]


def vllm_block_keys(extras: Json, block: int, start: int, end: int, mm_idx: int) -> Tuple[List[Key], int]:
    """vLLM's per-block extra keys (semantic) and the next multimodal cursor."""
    keys: List[Key] = []
    if extras.get("lora"):
        keys.append(("lora", extras["lora"], extras.get("lora_path", "")))
    mm: List[List[Any]] = extras.get("mm", [])
    while mm_idx < len(mm):
        ident, offset, length = mm[mm_idx]
        if end <= offset:
            break
        if start >= offset + length:
            mm_idx += 1
            continue
        keys.append(("mm", ident, offset - start))
        if end >= offset + length:
            mm_idx += 1
            continue
        break
    if start == 0 and extras.get("salt"):
        keys.append(("salt", extras["salt"]))
    if "embeds" in extras:
        keys.append(("embeds", bytes.fromhex(extras["embeds"][block])))
    return keys, mm_idx


def vllm_lookahead_block_keys(
    extras: Json, block: int, start: int, end: int, lookahead: int, mm_idx: int
) -> Tuple[List[Key], int]:
    """The keys of the widened window, then the cursor rewound to the first
    multimodal item still open at the block's end."""
    keys, mm_idx = vllm_block_keys(extras, block, start, end + lookahead, mm_idx)
    mm: List[List[Any]] = extras.get("mm", [])
    while mm_idx > 0:
        _, offset, length = mm[mm_idx - 1]
        if offset + length <= end:
            break
        mm_idx -= 1
    return keys, mm_idx


def python_key(key: Key, tagged: bool) -> Any:
    """The Python value vLLM hashes for one key. Request strings are fresh
    objects; the tags are code constants (interned), as in vLLM."""
    kind = key[0]
    if kind == "lora":
        return ("lora", fresh_str(key[1]), fresh_str(key[2])) if tagged else fresh_str(key[1])
    if kind == "mm":
        return ("mm", fresh_str(key[1]), key[2]) if tagged else (fresh_str(key[1]), key[2])
    if kind == "salt":
        return ("cache_salt", fresh_str(key[1])) if tagged else fresh_str(key[1])
    return ("prompt_embeds", key[1]) if tagged else key[1]


def key_json(key: Key) -> Json:
    kind = key[0]
    if kind == "lora":
        return {"lora": key[1], "path": key[2]}
    if kind == "mm":
        return {"mm": [key[1], key[2]]}
    if kind == "salt":
        return {"salt": key[1]}
    return {"embeds": bytes(key[1]).hex()}


def case_tokens(case: Json) -> List[int]:
    if "tokens_golden" in case:
        return [(i * GOLDEN) % U32 for i in range(int(case["tokens_golden"]))]
    return [int(t) for t in case.get("tokens") or []]


def full_blocks(tokens: Sequence[Any], size: int) -> List[Tuple[int, int]]:
    return [(s, s + size) for s in range(0, len(tokens) - size + 1, size)]


def run_vllm(case: Json) -> Json:
    fn = VLLM_HASH_FNS[case["scheme"]]
    root = fn(fresh_str(case["seed"]))
    tokens = case_tokens(case)
    extras: Json = case.get("extras") or {}
    tagged = bool(extras.get("tagged"))
    lookahead = int(extras.get("lookahead", 0))
    size = int(case["block_size"])
    parent = root
    mm_idx = 0
    blocks: List[Json] = []
    for b, (start, end) in enumerate(full_blocks(tokens, size)):
        if end + lookahead > len(tokens):
            break  # vLLM waits for the lookahead tokens
        if lookahead:
            keys, mm_idx = vllm_lookahead_block_keys(extras, b, start, end, lookahead, mm_idx)
        else:
            keys, mm_idx = vllm_block_keys(extras, b, start, end, mm_idx)
        extra: Any = tuple(python_key(k, tagged) for k in keys) if keys else None
        ahead = tokens[end : end + lookahead]
        if lookahead:
            extra = (extra, *ahead)
        digest = fn((parent, tuple(tokens[start:end]), extra))
        block: Json = {
            "extra_keys": [key_json(k) for k in keys] if keys else None,
            "digest": digest.hex(),
            "event_int": int.from_bytes(digest, "big") & (2**64 - 1),
        }
        if tagged:
            block["tagged"] = True
        if lookahead:
            block["lookahead"] = ahead
        blocks.append(block)
        parent = digest
    return {"root": root.hex(), "blocks": blocks}


def run_sglang(case: Json) -> Json:
    salt: str = case.get("salt", "")
    prior: Optional[bytes] = None
    if salt:
        prior = hashlib.sha256(SGLANG_SALT_TAG + salt.encode("utf-8")).digest()
    root = prior.hex() if prior is not None else ""
    tokens = case_tokens(case)
    # EAGLE: the key is the bigrams (t[i], t[i+1]); a page holds block_size
    # of them and hashes both elements of each.
    keys: List[Tuple[int, ...]] = (
        [(tokens[i], tokens[i + 1]) for i in range(len(tokens) - 1)] if case.get("eagle") else [(t,) for t in tokens]
    )
    blocks: List[Json] = []
    for start, end in full_blocks(keys, int(case["block_size"])):
        h = hashlib.sha256()
        if prior is not None:
            h.update(prior)
        for key in keys[start:end]:
            for t in key:
                h.update(t.to_bytes(4, "little", signed=False))
        prior = h.digest()
        blocks.append(
            {
                "extra_keys": None,
                "digest": prior.hex(),
                "event_int": int.from_bytes(prior[:8], "big", signed=True),
            }
        )
    return {"root": root, "blocks": blocks}


def run_trtllm(case: Json) -> Json:
    scope: List[Optional[int]] = [case.get("lora_id"), None]
    if case.get("salt"):
        salt_digest = hashlib.sha256(str(case["salt"]).encode("utf-8")).digest()
        scope[1] = int.from_bytes(salt_digest[:8], "little", signed=False)
    mask = sum(1 << i for i, v in enumerate(scope) if v is not None)
    scope_bytes = bytes([mask]) + b"".join(
        v.to_bytes(8, "little", signed=False) for v in scope if v is not None
    )
    parent = hashlib.sha256(scope_bytes).digest()
    root = parent.hex()
    tokens = case_tokens(case)
    blocks: List[Json] = []
    for start, end in full_blocks(tokens, int(case["block_size"])):
        h = hashlib.sha256(parent)
        for t in tokens[start:end]:
            h.update(t.to_bytes(8, "little", signed=False))
        parent = h.digest()
        blocks.append(
            {
                "extra_keys": None,
                "digest": parent.hex(),
                "event_int": int.from_bytes(parent[:8], "big", signed=False),
            }
        )
    return {"root": root, "blocks": blocks}


M32 = 2**32 - 1
M64 = 2**64 - 1


def _v1_mix32(value: int, seed: int) -> int:
    v = value & M32
    v = (((v >> 16) ^ v) * 0x45D9F3B) & M32
    v = (((v >> 16) ^ v) * 0x45D9F3B) & M32
    v = ((v >> 16) ^ v) & M32
    v = (v + 0x9E3779B9) & M32
    return seed ^ ((v + ((seed << 6) & M64) + (seed >> 2)) & M64)


def _v1_mix64(value: int, seed: int) -> int:
    v = value & M64
    v = ((v ^ (v >> 30)) * 0xBF58476D1CE4E5B9) & M64
    v = ((v ^ (v >> 27)) * 0x94D049BB133111EB) & M64
    v = v ^ (v >> 31)
    return seed ^ ((v + 0x9E3779B9 + ((seed << 6) & M64) + (seed >> 2)) & M64)


def run_trtllm_v1(case: Json) -> Json:
    """TensorRT-LLM v1_block_key: a 64-bit mix chained on the parent key (0
    at the root); the salt id enters the root block, the LoRA id every block."""
    salt_id: Optional[int] = None
    if case.get("salt"):
        salt_digest = hashlib.sha256(str(case["salt"]).encode("utf-8")).digest()
        salt_id = int.from_bytes(salt_digest[:8], "little", signed=False)
    lora: Optional[int] = case.get("lora_id")
    tokens = case_tokens(case)
    parent = 0
    blocks: List[Json] = []
    for start, end in full_blocks(tokens, int(case["block_size"])):
        block = tokens[start:end]
        seed = (len(block) ^ ((parent * 0xBF58476D1CE4E5B9) & M64)) & M64
        if parent == 0 and salt_id is not None:
            seed = _v1_mix64(salt_id, seed)
        for t in block:
            seed = _v1_mix32(t, seed)
        if lora is not None:
            seed = _v1_mix64(lora, seed)
        parent = seed
        blocks.append({"extra_keys": None, "digest": seed.to_bytes(8, "big").hex(), "event_int": seed})
    return {"root": "0000000000000000", "blocks": blocks}


def run_case(case: Json) -> Json:
    scheme = case["scheme"]
    if scheme in VLLM_HASH_FNS:
        return run_vllm(case)
    if scheme == "sglang-sha256":
        return run_sglang(case)
    if scheme == "trtllm-v2-sha256":
        return run_trtllm(case)
    if scheme == "trtllm-v1-block-key":
        return run_trtllm_v1(case)
    raise ValueError(f"unknown scheme {scheme!r}")


VLLM_SCHEMES = ["vllm-sha256", "vllm-sha256-cbor", "vllm-xxhash", "vllm-xxhash-cbor"]
# Token values where a wrong width, sign or pickle opcode shows: BININT1,
# BININT2, BININT and LONG1 boundaries.
TOKEN_EDGES = [0, 1, 255, 256, 65535, 65536, 2**31 - 1, 2**31, 2**32 - 1]


def cases() -> List[Json]:
    rng = random.Random(14)

    def toks(n: int) -> List[int]:
        return [rng.getrandbits(rng.choice([8, 16, 17, 31, 32])) for _ in range(n)]

    out: List[Json] = []

    def add(name: str, **case: Any) -> None:
        out.append({"name": name, **case})

    seeds = [DEFAULT_VLLM_SEED, "0", "42", "ünïcode-seed", "", "x" * 300]
    for scheme in VLLM_SCHEMES:
        for seed in seeds:
            add(f"{scheme} seed {seed[:20]!r}", scheme=scheme, seed=seed, block_size=16, tokens=toks(16))
        add(f"{scheme} chain of 5", scheme=scheme, seed="0", block_size=16, tokens=toks(16 * 5 + 7))
        add(f"{scheme} token edges", scheme=scheme, seed=DEFAULT_VLLM_SEED, block_size=len(TOKEN_EDGES), tokens=TOKEN_EDGES * 2)
        for size in [1, 2, 3, 4, 255, 256]:
            add(f"{scheme} block size {size}", scheme=scheme, seed="0", block_size=size, tokens=toks(size * 2))
        add(f"{scheme} lora", scheme=scheme, seed="0", block_size=4, tokens=toks(12), extras={"lora": "adapter-a"})
        add(f"{scheme} cache salt", scheme=scheme, seed="0", block_size=4, tokens=toks(12), extras={"salt": "tenant-7"})
        add(f"{scheme} lora and salt, one-char singletons", scheme=scheme, seed="0", block_size=4, tokens=toks(8), extras={"lora": "a", "salt": "a"})
        add(f"{scheme} long lora name", scheme=scheme, seed="0", block_size=4, tokens=toks(8), extras={"lora": "L" * 300})
        add(
            f"{scheme} multimodal",
            scheme=scheme, seed=DEFAULT_VLLM_SEED, block_size=4, tokens=toks(24),
            extras={"mm": [["img-aaaa", 2, 6], ["img-bbbb", 8, 2], ["img-cccc", 10, 1], ["img-dddd", 20, 8]]},
        )
        add(
            f"{scheme} multimodal, equal identifiers in one block",
            scheme=scheme, seed="0", block_size=8, tokens=toks(16),
            extras={"mm": [["same-image", 1, 2], ["same-image", 4, 2]]},
        )
        add(
            f"{scheme} every extra key",
            scheme=scheme, seed="42", block_size=4, tokens=toks(12),
            extras={
                "lora": "adapter-b",
                "mm": [["mm-1", 3, 3]],
                "salt": "s3cr3t",
                "embeds": [hashlib.sha256(bytes([i])).hexdigest() for i in range(3)],
            },
        )
        add(f"{scheme} empty and one-byte embeds digests", scheme=scheme, seed="0", block_size=2, tokens=toks(6), extras={"embeds": ["", "07", "07"]})
        # vLLM 0.33: tagged keys (the "mm" tag repeats within a block).
        add(
            f"{scheme} tagged, every extra key",
            scheme=scheme, seed=DEFAULT_VLLM_SEED, block_size=4, tokens=toks(12),
            extras={
                "tagged": True, "lora": "adapter-b", "lora_path": "/adapters/b",
                "mm": [["mm-1", 1, 1], ["mm-2", 2, 3]], "salt": "s3cr3t",
                "embeds": [hashlib.sha256(bytes([i])).hexdigest() for i in range(3)],
            },
        )
        add(f"{scheme} tagged, lora without path", scheme=scheme, seed="0", block_size=4, tokens=toks(8), extras={"tagged": True, "lora": "a"})
        add(f"{scheme} tagged, no keys", scheme=scheme, seed="0", block_size=4, tokens=toks(8), extras={"tagged": True})
        # vLLM 0.33: lookahead hashing.
        add(f"{scheme} lookahead 1", scheme=scheme, seed="0", block_size=4, tokens=toks(13), extras={"lookahead": 1})
        add(
            f"{scheme} lookahead 3, multimodal across the window, tagged",
            scheme=scheme, seed=DEFAULT_VLLM_SEED, block_size=4, tokens=toks(19),
            extras={"lookahead": 3, "tagged": True, "salt": "t", "mm": [["img", 5, 4], ["aud", 13, 2]]},
        )
    # Pickle framing: a block whose pickle passes 64 KiB spans two frames.
    add("vllm-sha256 two pickle frames", scheme="vllm-sha256", seed="0", block_size=14000, tokens_golden=14000)
    add("vllm-sha256 frame at the boundary", scheme="vllm-sha256", seed="0", block_size=13100, tokens_golden=13100)
    for salt in ["", "tenant-a", "ünïcode"]:
        add(f"sglang salt {salt!r}", scheme="sglang-sha256", salt=salt, block_size=16, tokens=toks(16 * 3))
    add("sglang page size 1", scheme="sglang-sha256", block_size=1, tokens=toks(5))
    add("sglang token edges", scheme="sglang-sha256", block_size=9, tokens=TOKEN_EDGES)
    add("sglang eagle bigrams", scheme="sglang-sha256", eagle=True, block_size=4, tokens=toks(13))
    add("sglang eagle bigrams, salted", scheme="sglang-sha256", eagle=True, salt="tenant-a", block_size=1, tokens=toks(4))
    for lora_id, salt in [(None, ""), (7, ""), (None, "tenant-a"), (2**64 - 1, "t")]:
        case: Json = {"scheme": "trtllm-v2-sha256", "block_size": 32, "tokens": toks(64)}
        if lora_id is not None:
            case["lora_id"] = lora_id
        if salt:
            case["salt"] = salt
        add(f"trtllm lora {lora_id} salt {salt!r}", **case)
    add("trtllm token edges", scheme="trtllm-v2-sha256", block_size=9, tokens=TOKEN_EDGES)
    for lora_id, salt in [(None, ""), (7, ""), (None, "tenant-a"), (2**64 - 1, "t")]:
        case = {"scheme": "trtllm-v1-block-key", "block_size": 32, "tokens": toks(96)}
        if lora_id is not None:
            case["lora_id"] = lora_id
        if salt:
            case["salt"] = salt
        add(f"trtllm v1 lora {lora_id} salt {salt!r}", **case)
    add("trtllm v1 token edges", scheme="trtllm-v1-block-key", block_size=9, tokens=TOKEN_EDGES * 2)
    return out


def generate() -> Json:
    chains = []
    for case in cases():
        chains.append({**case, **run_case(case)})
    return {
        "about": "router/enginehash oracle vectors; regenerate with testdata/oracle.py generate",
        "chains": chains,
    }


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["generate", "batch", "serve"])
    parser.add_argument(
        "--vllm-hashing",
        metavar="PATH",
        help="use the hash functions of vLLM's own vllm/utils/hashing.py (a file from a vLLM wheel) instead of this file's",
    )
    args = parser.parse_args(argv)
    if args.vllm_hashing:
        use_vllm_hashing(args.vllm_hashing)
    if args.mode == "generate":
        # One chain a line: diffs stay readable, the file stays small.
        doc = generate()
        sys.stdout.write('{"about": ' + json.dumps(doc["about"]) + ',\n "chains": [\n')
        lines = [json.dumps(c, ensure_ascii=False) for c in doc["chains"]]
        sys.stdout.write(",\n".join(lines))
        sys.stdout.write("\n]}\n")
        return 0
    if args.mode == "serve":
        for line in sys.stdin:
            sys.stdout.write(json.dumps(run_case(json.loads(line))) + "\n")
            sys.stdout.flush()
        return 0
    batch = json.load(sys.stdin)
    json.dump([run_case(c) for c in batch], sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
