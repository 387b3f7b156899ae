"""Several threads on one tree and on the hash functions at once."""

from __future__ import annotations

import gc
import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import kvhash_oracle as oracle
import numpy as np

import kvhash
from kv_events import stored

THREADS = 8


def test_concurrent_apply_and_find_matches(kv):
    tree = kv.RadixTree(enforce=True)
    shared = kv.compute_block_hash_for_seq(list(range(64)), 4)  # 16 blocks every worker stores
    n_blocks = len(shared)
    start = threading.Barrier(THREADS)

    def worker(w):
        start.wait()
        seen = []
        # Store the chain one block per event, querying between events: a
        # worker's own score can only grow, one block at a time. Engine
        # hashes are stable (the same block has the same id on every worker).
        parent = None
        for i, h in enumerate(shared):
            ext = 1000 + i
            tree.apply_event(w, stored(i + 1, [(ext, h)], parent=parent))
            parent = ext
            scores = tree.find_matches(shared).scores
            seen.append(scores[(w, 0)])
            for (other, rank), score in scores.items():
                assert rank == 0 and 1 <= score <= n_blocks
        # Remove the second half again, leaf first (a node no worker holds
        # drops its children, so removing a parent first would orphan them).
        for i in reversed(range(n_blocks // 2, n_blocks)):
            tree.apply_event(w, json.dumps({"event_id": 100 + i, "data": {"removed": {"block_hashes": [1000 + i]}}}).encode())
        return seen

    with ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(worker, range(THREADS)))
    for seen in results:
        assert seen == list(range(1, n_blocks + 1))
    final = tree.find_matches(shared)
    assert final.scores == {(w, 0): n_blocks // 2 for w in range(THREADS)}
    assert final.tree_sizes == {(w, 0): n_blocks // 2 for w in range(THREADS)}
    stats = tree.stats()
    assert sum(stats["violations"].values()) == 0
    assert len(stats["workers"]) == THREADS


def test_concurrent_hashing_matches_oracle(kv):
    rng = np.random.default_rng(7)
    prompts = [rng.integers(0, 2**32, size=int(n), dtype=np.uint32) for n in rng.integers(0, 3000, size=24)]
    want = [oracle.block_hashes(p.tolist(), 16, lora_name="l%d" % i) for i, p in enumerate(prompts)]

    def run(i):
        got = []
        for _ in range(5):
            got.append(kv.block_hashes(prompts[i], 16, lora_name="l%d" % i).tolist())
            got.append(kv.compute_block_hash_for_seq(prompts[i].tolist(), 16, lora_name="l%d" % i))
        return i, got

    with ThreadPoolExecutor(THREADS) as pool:
        for i, got in pool.map(run, range(len(prompts))):
            assert all(g == want[i] for g in got)


def test_error_messages_stay_with_their_thread(kv):
    # Each thread fails in its own way, many times; the message it gets must
    # describe its own failure (kvhash_last_error is per thread).
    barrier = threading.Barrier(4)

    def zero(_):
        barrier.wait()
        msgs = set()
        for _ in range(200):
            try:
                kv.block_hashes([1, 2, 3], 0)
            except kvhash.InvalidArgumentError as e:
                msgs.add(e.message)
        return msgs

    def mm(_):
        barrier.wait()
        msgs = set()
        for _ in range(200):
            try:
                kv.block_hashes([1, 2, 3, 4], 4, mm_hashes=[None, None])
            except kvhash.InvalidArgumentError as e:
                msgs.add(e.message)
        return msgs

    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(zero, 0), pool.submit(mm, 0), pool.submit(zero, 0), pool.submit(mm, 0)]
        results = [f.result() for f in futures]
    for i, msgs in enumerate(results):
        assert len(msgs) == 1, msgs
        (msg,) = msgs
        if i % 2 == 0:
            assert "block size" in msg and "multimodal" not in msg
        else:
            assert "multimodal" in msg


def test_trees_collected_in_the_middle_of_calls_do_not_deadlock(kv):
    # A tree in a reference cycle is freed by the cyclic GC, which may run
    # inside another call of the same thread (while the wasm backend holds
    # its lock). Run in a daemon thread so that a deadlock fails the test
    # instead of hanging the run.
    def churn():
        old = gc.get_threshold()
        gc.set_threshold(1)
        try:
            for i in range(300):
                tree = kv.RadixTree()
                tree.cycle = tree
                del tree
                kv.block_hashes([1, 2, 3, 4, 5, 6, 7, 8], 4, mm_hashes=[[i], None])
        finally:
            gc.set_threshold(*old)
        gc.collect()
        return kv.compute_block_hash_for_seq([1, 2, 3, 4], 4)

    result = []
    t = threading.Thread(target=lambda: result.append(churn()), daemon=True)
    t.start()
    t.join(timeout=60)
    assert not t.is_alive(), "deadlock: a collected tree's free waited for a lock its own thread held"
    assert result == [[14643705804678351452]]


def test_native_calls_release_the_gil():
    # A worker thread makes several long library calls while the main
    # thread spins. The switch interval is longer than all the worker's
    # calls together, so the interpreter never takes the GIL from the
    # worker: the main thread can run before the worker is done only if the
    # GIL is released inside the calls (CDLL). With PyDLL it counts 0.
    import kvhash._native as native

    tokens = np.zeros(16 * 1024 * 1024, dtype=np.uint32)
    native.block_hashes(tokens, 16)  # fault the pages in outside the measurement
    started = threading.Event()
    done = threading.Event()

    def work():
        started.set()
        for _ in range(6):
            native.block_hashes(tokens, 16)
        done.set()

    old = sys.getswitchinterval()
    sys.setswitchinterval(0.1)
    try:
        t = threading.Thread(target=work)
        t.start()
        started.wait()
        spins = 0
        while not done.is_set():
            spins += 1
        t.join()
    finally:
        sys.setswitchinterval(old)
    assert spins > 1000, spins
