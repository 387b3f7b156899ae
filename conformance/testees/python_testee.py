"""Conformance testee of the Python package `kvhash` (conformance/README.md, "Testee protocol").

One script for both backends: KVHASH_BACKEND=native (ctypes over libkvhash.so, testee
"python-ctypes") or KVHASH_BACKEND=wasm (wasmtime over kvhash.wasm, testee
"python-wasmtime"). It only translates JSON to the package's calls and back.
"""

import json
import sys

import kvhash

OPS = ["hello", "block_hashes", "sequence_hashes", "seed", "chain_step", "raw_hash", "index"]

# The package's exception classes, as the protocol's error kinds.
KINDS = (
    (kvhash.DecodeError, "decode"),
    (kvhash.RejectedError, "rejected"),
    (kvhash.InvalidArgumentError, "invalid_argument"),
)


def u64s(values):
    return [str(v) for v in values]


def mm_hashes(entries):
    if entries is None:
        return None
    return [None if e is None else [int(h) for h in e] for e in entries]


def kind(exc):
    for cls, name in KINDS:
        if isinstance(exc, cls):
            return name
    return "internal"


def run_step(tree, step):
    try:
        if "apply" in step:
            a = step["apply"]
            tree.apply_event(int(a["worker_id"]), a["event"].encode("utf-8"))
            return {"ok": True}
        if "find_matches" in step:
            f = step["find_matches"]
            scores = tree.find_matches([int(h) for h in f["hashes"]], early_exit=f["early_exit"])
            return {
                "scores": [
                    {"worker_id": str(w), "dp_rank": r, "score": s, "tree_size": str(scores.tree_sizes[(w, r)])}
                    for (w, r), s in scores.scores.items()
                ]
            }
        if "remove_worker" in step:
            tree.remove_worker(int(step["remove_worker"]["worker_id"]))
            return {"ok": True}
        if "clear_all_blocks" in step:
            tree.clear_all_blocks(int(step["clear_all_blocks"]["worker_id"]))
            return {"ok": True}
        if "stats" in step:
            return {"stats": tree.stats()}
        if "dump" in step:
            return {"events": tree.dump_tree_as_events()}
    except kvhash.KvHashError as exc:
        return {"error": kind(exc), "message": str(exc)}
    return {"error": "invalid_argument", "message": "step has no known operation"}


def run_index(req):
    if req["mode"] not in ("warn", "enforce"):
        raise ValueError("mode must be warn or enforce")
    with kvhash.RadixTree(enforce=req["mode"] == "enforce") as tree:
        return {"results": [run_step(tree, step) for step in req["steps"]]}


def handle(req):
    op = req.get("op")
    if op == "hello":
        return {
            "binding": "python-" + kvhash.BACKEND,
            "library_version": kvhash.__version__,
            "spec_version": kvhash.SPEC_VERSION,
            "ops": OPS,
        }
    if op == "block_hashes":
        o = req["options"]
        hashes = kvhash.block_hashes(
            req["tokens"],
            req["block_size"],
            lora_name=o["lora_name"],
            cache_namespace=o["cache_namespace"],
            is_eagle=o["eagle"],
            mm_hashes=mm_hashes(o["mm_hashes"]),
        )
        return {"block_hashes": u64s(hashes)}
    if op == "sequence_hashes":
        return {"sequence_hashes": u64s(kvhash.sequence_hashes([int(h) for h in req["block_hashes"]]))}
    if op == "seed":
        return {"seed": str(kvhash.seed(req["lora_name"], req["cache_namespace"]))}
    if op == "raw_hash":
        return {"hash": str(kvhash.raw_hash(bytes.fromhex(req["bytes_hex"])))}
    if op == "chain_step":
        return {"hash": str(kvhash.chain_step(int(req["parent"]), int(req["local"])))}
    if op == "index":
        return run_index(req)
    raise ValueError("unknown op %r" % op)


def main():
    for line in sys.stdin:
        req = json.loads(line)
        try:
            answer = handle(req)
        except (kvhash.KvHashError, ValueError, TypeError, OverflowError, KeyError) as exc:
            answer = {"error": "%s: %s" % (type(exc).__name__, exc)}
        answer["id"] = req.get("id")
        sys.stdout.write(json.dumps(answer, ensure_ascii=False) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
