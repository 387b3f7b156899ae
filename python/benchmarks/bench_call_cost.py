"""Per-call cost of each backend for a short prompt (docs/api/python.md,
"Backends"): what one call costs when there is little to hash, so the cost
of crossing into the library (ctypes) or the WASM module (wasmtime, then the
Go runtime inside it) dominates.

Best of several runs of many calls each; the machine's other load inflates
every figure alike. Run: make bench-python (after bench_hash.py).
"""

from __future__ import annotations

import timeit
from typing import Any, Callable, List, Tuple

import kvhash._native as native
import kvhash.wasm as wasm

PROMPT = list(range(64))  # 64 tokens: 4 blocks of 16


def cases(kv: Any) -> List[Tuple[str, Callable[[], object]]]:
    local = kv.compute_block_hash_for_seq(PROMPT, 16)
    tree = kv.RadixTree()
    return [
        ("seed() (no hashing)", lambda: kv.seed()),
        ("compute_block_hash_for_seq, 64 tokens", lambda: kv.compute_block_hash_for_seq(PROMPT, 16)),
        ("block_and_sequence_hashes, 64 tokens", lambda: kv.block_and_sequence_hashes(PROMPT, 16)),
        ("RadixTree.find_matches, 4 blocks", lambda: tree.find_matches(local)),
    ]


def best_us(fn: Callable[[], object], number: int = 500, repeat: int = 7) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def main() -> None:
    print("%-40s %10s %10s %8s" % ("one call", "native", "wasm", "ratio"))
    for (label, n), (_, w) in zip(cases(native), cases(wasm)):
        tn, tw = best_us(n), best_us(w)
        print("%-40s %8.1f us %8.1f us %7.0fx" % (label, tn, tw, tw / tn))


if __name__ == "__main__":
    main()
