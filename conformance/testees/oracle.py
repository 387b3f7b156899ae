"""Conformance testee of the independent oracle (conformance/oracle/kvhash_oracle.py).

Speaks the testee protocol of conformance/README.md: one JSON request a line on
stdin, one JSON answer a line on stdout. The oracle has no index, so it does not
list the "index" op; the runner uses its hashing answers as the expected ones in
the random differential round.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))

import kvhash_oracle as oracle  # noqa: E402

OPS = ["hello", "block_hashes", "sequence_hashes", "seed", "chain_step", "raw_hash"]


def u64s(values):
    return [str(v) for v in values]


def mm_hashes(entries):
    if entries is None:
        return None
    return [None if e is None else [int(h) for h in e] for e in entries]


def handle(req):
    op = req.get("op")
    if op == "hello":
        return {"binding": "oracle", "library_version": "oracle", "spec_version": oracle.SPEC_VERSION, "ops": OPS}
    if op == "block_hashes":
        o = req["options"]
        hashes = oracle.block_hashes(
            req["tokens"],
            req["block_size"],
            lora_name=o["lora_name"],
            cache_namespace=o["cache_namespace"],
            eagle=o["eagle"],
            mm_hashes=mm_hashes(o["mm_hashes"]),
        )
        return {"block_hashes": u64s(hashes)}
    if op == "sequence_hashes":
        return {"sequence_hashes": u64s(oracle.sequence_hashes([int(h) for h in req["block_hashes"]]))}
    if op == "seed":
        return {"seed": str(oracle.seed(req["lora_name"], req["cache_namespace"]))}
    if op == "chain_step":
        return {"hash": str(oracle.chain_step(int(req["parent"]), int(req["local"])))}
    if op == "raw_hash":
        return {"hash": str(oracle.raw_hash(bytes.fromhex(req["bytes_hex"])))}
    raise ValueError("unknown op %r" % op)


def main():
    for line in sys.stdin:
        req = json.loads(line)
        try:
            answer = handle(req)
        except (ValueError, KeyError, TypeError) as exc:
            answer = {"error": "%s: %s" % (type(exc).__name__, exc)}
        answer["id"] = req.get("id")
        sys.stdout.write(json.dumps(answer, ensure_ascii=False) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
