"""RadixTree behaviour through the bindings: events, matches, dump/replay,
workers, stats, enforce mode and violation counters."""

from __future__ import annotations

import array
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import SRC

import kvhash
from kv_events import stored, removed


def cleared(event_id, dp_rank=0):
    return json.dumps({"event_id": event_id, "data": "cleared", "dp_rank": dp_rank}).encode()


def prompt(kv, n_blocks, start=0, block_size=4):
    return kv.compute_block_hash_for_seq(list(range(start, start + n_blocks * block_size)), block_size)


def test_prefix_scores_and_tree_sizes(kv):
    tree = kv.RadixTree()
    local = prompt(kv, 4)
    tree.apply_event(1, stored(1, [(10 + i, h) for i, h in enumerate(local)]))
    tree.apply_event(2, stored(1, [(20, local[0]), (21, local[1])]))
    other = prompt(kv, 2, start=1000)
    tree.apply_event(3, stored(1, [(30, other[0]), (31, other[1])]))
    m = tree.find_matches(local)
    assert m.scores == {(1, 0): 4, (2, 0): 2}
    assert m.tree_sizes == {(1, 0): 4, (2, 0): 2}
    assert tree.find_matches(other).scores == {(3, 0): 2}
    assert tree.find_matches([]).scores == {}
    # Matching stops at the first block a worker lacks.
    assert tree.find_matches([local[0], 12345, local[2]]).scores == {(1, 0): 1, (2, 0): 1}


def test_find_matches_early_exit(kv):
    tree = kv.RadixTree()
    local = prompt(kv, 4)
    tree.apply_event(1, stored(1, [(10 + i, h) for i, h in enumerate(local)]))
    tree.apply_event(2, stored(1, [(20, local[0])]))
    full = tree.find_matches(local, early_exit=False).scores
    early = tree.find_matches(local, early_exit=True).scores
    assert full == {(1, 0): 4, (2, 0): 1}
    assert early[(2, 0)] == 1 and 1 <= early[(1, 0)] <= 4


def test_find_matches_accepts_buffers(kv):
    tree = kv.RadixTree()
    local = prompt(kv, 3)
    tree.apply_event(1, stored(1, [(10 + i, h) for i, h in enumerate(local)]))
    want = {(1, 0): 3}
    assert tree.find_matches(array.array("Q", local)).scores == want
    assert tree.find_matches(np.asarray(local, dtype=np.uint64)).scores == want
    assert tree.find_matches(tuple(local)).scores == want
    assert tree.find_matches(kv.block_hashes(list(range(12)), 4)).scores == want


def test_many_workers_grow_the_result_buffers(kv):
    tree = kv.RadixTree()
    local = prompt(kv, 1)
    for w in range(40):
        tree.apply_event(w, stored(1, [(1000 + w, local[0])], dp_rank=w % 3))
    m = tree.find_matches(local)
    assert len(m.scores) == 40
    assert m.scores[(39, 0)] == 1 and m.scores[(5, 2)] == 1
    assert tree.workers() == sorted((w, w % 3) for w in range(40))


def test_removed_and_cleared_events(kv):
    tree = kv.RadixTree()
    local = prompt(kv, 3)
    tree.apply_event(1, stored(1, [(10, local[0]), (11, local[1]), (12, local[2])]))
    tree.apply_event(1, removed(2, [12]))
    assert tree.find_matches(local).scores == {(1, 0): 2}
    tree.apply_event(1, stored(3, [(10, local[0])], dp_rank=1))
    tree.apply_event(1, cleared(4, dp_rank=0))
    assert tree.find_matches(local).scores == {(1, 1): 1}


def test_dump_and_replay_rebuild_the_tree(kv):
    tree = kv.RadixTree()
    a = prompt(kv, 3)
    b = prompt(kv, 2, start=500)
    tree.apply_event(1, stored(1, [(10, a[0]), (11, a[1]), (12, a[2])]))
    tree.apply_event(2, stored(1, [(20, a[0])], dp_rank=3))
    tree.apply_event(2, stored(2, [(21, b[0]), (22, b[1])], dp_rank=3))
    events = tree.dump_tree_as_events()
    assert len(events) >= 3
    for e in events:
        ev = json.loads(e)
        assert set(ev) >= {"worker_id", "event"}
    copy = kv.RadixTree()
    for e in events:
        copy.apply_router_event(e.encode())
    for q in (a, b, a[:1]):
        assert copy.find_matches(q) == tree.find_matches(q)
    assert copy.workers() == tree.workers() == [(1, 0), (2, 3)]
    assert sorted(copy.dump_tree_as_events()) == sorted(events)
    assert kv.RadixTree().dump_tree_as_events() == []


def test_large_dump_grows_the_text_buffer(kv):
    tree = kv.RadixTree()
    local = prompt(kv, 300, block_size=1)
    for w in range(5):
        tree.apply_event(w, stored(1, [(w * 1000 + i, h) for i, h in enumerate(local)]))
    events = tree.dump_tree_as_events()
    assert sum(len(e) for e in events) > 4096
    assert tree.stats()["workers"][0]["blocks"] == 300


def test_apply_stored_and_removed_without_json(kv):
    tree = kv.RadixTree()
    local = prompt(kv, 3)
    tree.apply_stored(5, [50, 51], local[:2], dp_rank=2, event_id=1)
    tree.apply_stored(5, array.array("Q", [52]), array.array("Q", local[2:]), parent_hash=51, dp_rank=2)
    assert tree.find_matches(local).scores == {(5, 2): 3}
    tree.apply_removed(5, [51, 52], dp_rank=2)
    assert tree.find_matches(local).scores == {(5, 2): 1}
    tree.clear_worker(5, dp_rank=2)
    assert tree.find_matches(local).scores == {}
    assert tree.workers() == [(5, 2)]
    with pytest.raises(ValueError, match="same length"):
        tree.apply_stored(5, [1, 2], [3])


def test_clear_all_blocks_keeps_worker_remove_worker_drops_it(kv):
    tree = kv.RadixTree()
    local = prompt(kv, 2)
    tree.apply_event(9, stored(1, [(90, local[0])], dp_rank=0))
    tree.apply_event(9, stored(1, [(91, local[0])], dp_rank=1))
    tree.clear_all_blocks(9)
    assert tree.find_matches(local).scores == {}
    assert tree.workers() == [(9, 0), (9, 1)]
    tree.remove_worker(9)
    assert tree.workers() == []


def test_stats_shape_and_violation_counters(kv):
    tree = kv.RadixTree(enforce=False)
    local = prompt(kv, 2)
    tree.apply_event(1, stored(1, [(10, local[0]), (11, local[1])]))
    # Violations that drop (part of) an event raise in every mode, as in
    # Dynamo's tree; they are counted too.
    with pytest.raises(RuntimeError, match="parent_not_found") as err:
        tree.apply_event(1, stored(2, [(30, local[1])], parent=424242))
    assert isinstance(err.value, kvhash.RejectedError) and "warn mode" in err.value.message
    with pytest.raises(RuntimeError, match="block_not_found"):
        tree.apply_event(1, removed(3, [777]))
    # The rest only count in warn mode: the same content under another
    # engine hash (hash mismatch), a block stored twice (duplicate store).
    tree.apply_event(2, stored(1, [(99, local[0])]))
    tree.apply_event(1, stored(4, [(10, local[0])]))
    s = tree.stats()
    assert s["mode"] == "warn"
    assert s["nodes"] >= 2
    assert s["violations"] == {
        "parent_not_found": 1,
        "block_not_found": 1,
        "hash_mismatch": 1,
        "self_reference": 0,
        "duplicate_store": 1,
        "name_reused": 0,
    }
    w1, w2 = s["workers"]
    assert (w1["worker_id"], w1["dp_rank"], w1["blocks"]) == (1, 0, 2)
    assert w1["violations"]["parent_not_found"] == 1 and w1["violations"]["duplicate_store"] == 1
    assert (w2["worker_id"], w2["blocks"]) == (2, 1) and w2["violations"]["hash_mismatch"] == 1
    assert w1["unstable"] is False and w2["unstable"] is False
    assert tree.find_matches(local).scores == {(1, 0): 2, (2, 0): 1}


def test_enforce_property(kv):
    tree = kv.RadixTree(enforce=False)
    assert tree.enforce is False
    local = prompt(kv, 1)
    tree.apply_event(1, stored(1, [(10, local[0])]))
    tree.apply_event(2, stored(1, [(20, local[0])]))  # hash mismatch: counted only
    tree.enforce = True
    assert tree.enforce is True and tree.stats()["mode"] == "enforce"
    with pytest.raises(RuntimeError, match="enforce mode"):
        tree.apply_event(3, stored(1, [(30, local[0])]))  # now an error
    s = tree.stats()
    assert s["violations"]["hash_mismatch"] == 2
    assert [w["unstable"] for w in s["workers"]] == [False, False, True]
    # The store itself was applied (a mismatch does not stop it).
    assert tree.find_matches(local).scores == {(1, 0): 1, (2, 0): 1, (3, 0): 1}
    tree.enforce = False
    tree.apply_event(4, stored(1, [(40, local[0])]))
    assert tree.stats()["violations"]["hash_mismatch"] == 3
    with pytest.raises(TypeError):
        tree.enforce = 1
    assert kv.RadixTree(enforce=True).enforce is True


@pytest.mark.parametrize("backend", ["native", "wasm"])
@pytest.mark.parametrize("var", ["KVHASH_ENFORCE_ENGINE_HASH_STABILITY", "DYN_KV_ENFORCE_ENGINE_HASH_STABILITY"])
def test_mode_from_environment(backend, var):
    # The library reads the environment when it starts, so use a fresh process.
    code = (
        "import sys; sys.path.insert(0, %r)\n"
        "import kvhash\n"
        "print(kvhash.BACKEND, kvhash.RadixTree().enforce, kvhash.RadixTree(enforce=False).enforce)\n" % str(SRC)
    )
    env = dict(os.environ, KVHASH_BACKEND=backend)
    env.pop("KVHASH_ENFORCE_ENGINE_HASH_STABILITY", None)
    env.pop("DYN_KV_ENFORCE_ENGINE_HASH_STABILITY", None)
    off = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert off.stdout.split() == [backend, "False", "False"]
    env[var] = "true"
    on = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert on.stdout.split() == [backend, "True", "False"]


def test_closed_tree(kv):
    tree = kv.RadixTree()
    tree.close()
    assert tree.closed
    tree.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        tree.find_matches([1])
    with pytest.raises(RuntimeError, match="closed"):
        tree.stats()
    with kv.RadixTree() as t2:
        assert not t2.closed
    assert t2.closed


def test_unknown_handle_maps_to_runtime_error(kv):
    backend = kv.api.backend
    tree = kv.RadixTree()
    handle = tree._handle
    tree.close()
    with pytest.raises(RuntimeError) as err:
        backend.index_stats_json(handle, memoryview(bytearray(64)))
    assert isinstance(err.value, kvhash.UnknownHandleError) and err.value.status == -3
    assert err.value.message


def test_trees_are_independent(kv):
    a, b = kv.RadixTree(), kv.RadixTree()
    local = prompt(kv, 1)
    a.apply_event(1, stored(1, [(10, local[0])]))
    assert a.find_matches(local).scores == {(1, 0): 1}
    assert b.find_matches(local).scores == {}


def test_extreme_ids_round_trip(kv):
    # u64 worker ids and event ids, u32 dp ranks: all bits survive both
    # backends (the wasm one passes them as signed i64/i32).
    tree = kv.RadixTree()
    top64, top32 = 2**64 - 1, 2**32 - 1
    local = prompt(kv, 2)
    tree.apply_stored(top64, [top64, 2**63], local, dp_rank=top32, event_id=top64)
    tree.apply_event(2**63, stored(1, [(1, local[0])], dp_rank=2**31))
    assert tree.workers() == [(2**63, 2**31), (top64, top32)]
    assert tree.find_matches(local).scores == {(top64, top32): 2, (2**63, 2**31): 1}
    tree.apply_removed(top64, [2**63], dp_rank=top32)
    assert tree.find_matches(local).scores[(top64, top32)] == 1
    tree.clear_worker(top64, dp_rank=top32)
    tree.remove_worker(2**63)
    assert tree.workers() == [(top64, top32)]
    events = [json.loads(e) for e in kv.RadixTree().dump_tree_as_events()]
    assert events == []


# -- a tree is never copied (issue 10, item 18)


def _legacy_pickle(tree) -> bytes:
    """The pickle an older kvhash wrote: the class and the object's plain
    state, handle number included (the default protocol-2 reduction)."""
    import copyreg
    import io
    import pickle

    class Legacy(pickle.Pickler):
        def reducer_override(self, obj):
            if isinstance(obj, kvhash.RadixTree):
                state = {k: v for k, v in vars(obj).items() if k != "_finalizer"}
                assert state["_handle"] is not None
                return copyreg.__newobj__, (type(obj),), state
            return NotImplemented

    buf = io.BytesIO()
    Legacy(buf, protocol=2).dump(tree)
    return buf.getvalue()


def test_pickle_and_copy_are_type_errors_as_in_dynamo(kv):
    import copy
    import pickle

    tree = kv.RadixTree()
    tree.apply_event(1, stored(1, [(10, 100)]))
    for attempt in (
        lambda: pickle.dumps(tree),
        lambda: pickle.dumps(tree, protocol=0),
        lambda: copy.copy(tree),
        lambda: copy.deepcopy(tree),
        lambda: copy.deepcopy({"tree": tree}),
    ):
        with pytest.raises(TypeError, match="cannot pickle"):
            attempt()
    # The tree is untouched, and still answers.
    assert tree.find_matches([100]).scores == {(1, 0): 1}
    # A pickle written before the fix does not load either. (Only the class
    # `kvhash.RadixTree` can be found by name, so only that one was ever
    # pickled.)
    if kv.RadixTree is kvhash.RadixTree:
        legacy = _legacy_pickle(tree)
        with pytest.raises(TypeError, match="cannot pickle"):
            pickle.loads(legacy)


LOAD_IN_ANOTHER_PROCESS = r"""
import pickle, sys
sys.path.insert(0, sys.argv[1])
import kvhash
mine = kvhash.RadixTree()  # takes the same handle number as the sender's
mine.apply_event(9, b'{"event_id": 1, "data": {"stored": {"parent_hash": null, "blocks": [{"block_hash": 1, "tokens_hash": 555}]}}}')
try:
    other = pickle.loads(sys.stdin.buffer.read())
except TypeError as e:
    print("TypeError:", e)
else:
    print("LOADED", other.find_matches([555]).scores)
"""


def test_a_pickled_tree_never_attaches_to_another_processes_tree(tmp_path):
    tree = kvhash.RadixTree()
    tree.apply_event(1, stored(1, [(10, 100)]))
    res = subprocess.run(
        [sys.executable, "-c", LOAD_IN_ANOTHER_PROCESS, str(SRC)],
        input=_legacy_pickle(tree),
        capture_output=True,
        env=dict(os.environ),
        timeout=120,
    )
    assert res.returncode == 0, res.stderr.decode()
    out = res.stdout.decode()
    assert out.startswith("TypeError:") and "cannot pickle" in out, out
    assert "LOADED" not in out


# -- buffers are released on every path (issue 10, item 10)


def test_failing_calls_release_the_callers_buffer_even_when_the_error_is_kept(kv):
    tree = kv.RadixTree()
    kept = []
    hashes = array.array("Q", [1, 2])
    for call in (
        lambda: tree.find_matches(hashes, early_exit="yes"),
        lambda: tree.apply_stored(1, hashes, ["not", "ints"]),
        lambda: tree.apply_stored(1, hashes, [1]),  # lengths differ
        lambda: tree.apply_stored(1, [1, 2], hashes, parent_hash=12345),  # rejected by the library (warn: raises)
    ):
        try:
            call()
        except (TypeError, ValueError, RuntimeError) as e:
            kept.append(e)  # the traceback keeps the failing frame alive
        else:
            pytest.fail("expected an error")
        hashes.append(3)  # BufferError while the array is still exported
        del hashes[-1]
    closed = kv.RadixTree()
    closed.close()
    with pytest.raises(RuntimeError, match="closed") as err:
        closed.find_matches(hashes)
    hashes.append(3)
    assert len(kept) == 4 and err.value is not None
