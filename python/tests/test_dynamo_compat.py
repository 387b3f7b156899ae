"""The names, argument names, defaults, return types and exceptions of
Dynamo's `dynamo.llm` bindings, on both backends."""

from __future__ import annotations

import inspect
import json

import pytest

import kvhash
from kv_events import stored

# Every list of ints here is converted by the C extension, then by the
# array fallback (conftest.conversion).
pytestmark = pytest.mark.usefixtures("conversion")

P = inspect.Parameter

DYNAMO_TOKENS = list(range(1, 13))
DYNAMO_LOCAL = [14643705804678351452, 16777012769546811212, 483935686894639516]
DYNAMO_SEQ = [14643705804678351452, 4945711292740353085, 12583592247330656132]


def _params(fn):
    return [(p.name, p.default, p.kind) for p in inspect.signature(fn).parameters.values()]


def test_public_names():
    for name in kvhash.__all__:
        assert hasattr(kvhash, name), name
    for name in (
        "compute_block_hash_for_seq",
        "compute_block_hash_for_seq_py",
        "compute_seq_hash_for_block",
        "RadixTree",
        "OverlapScores",
    ):
        assert name in kvhash.__all__


def test_versions_come_from_the_library(kv):
    assert kv.__version__ == kv.api.backend.version()
    assert kv.SPEC_VERSION == kv.api.backend.spec_version() == "v1"
    assert kvhash.__version__ == kv.__version__
    assert kvhash.SPEC_VERSION == "v1"


def test_compute_block_hash_for_seq_signature(kv):
    assert _params(kv.compute_block_hash_for_seq) == [
        ("tokens", P.empty, P.POSITIONAL_OR_KEYWORD),
        ("kv_block_size", P.empty, P.POSITIONAL_OR_KEYWORD),
        ("block_mm_infos", None, P.POSITIONAL_OR_KEYWORD),
        ("lora_name", None, P.POSITIONAL_OR_KEYWORD),
        ("is_eagle", None, P.POSITIONAL_OR_KEYWORD),
        ("cache_namespace", None, P.POSITIONAL_OR_KEYWORD),
    ]
    old = _params(kv.compute_block_hash_for_seq_py)
    assert [p[0] for p in old[:2]] == ["tokens", "kv_block_size"]
    assert all(p[1] is None for p in old[2:])


def test_compute_seq_hash_for_block_signature(kv):
    assert _params(kv.compute_seq_hash_for_block) == [("block_hashes", P.empty, P.POSITIONAL_OR_KEYWORD)]


def test_radix_tree_signatures(kv):
    t = kv.RadixTree
    assert _params(t)[0] == ("expiration_duration_secs", None, P.POSITIONAL_OR_KEYWORD)
    assert _params(t.find_matches) == [
        ("self", P.empty, P.POSITIONAL_OR_KEYWORD),
        ("sequence", P.empty, P.POSITIONAL_OR_KEYWORD),
        ("early_exit", False, P.POSITIONAL_OR_KEYWORD),
    ]
    assert [p[0] for p in _params(t.apply_event)] == ["self", "worker_id", "kv_cache_event_bytes"]
    assert [p[0] for p in _params(t.remove_worker)] == ["self", "worker_id"]
    assert [p[0] for p in _params(t.clear_all_blocks)] == ["self", "worker_id"]
    assert [p[0] for p in _params(t.dump_tree_as_events)] == ["self"]


def test_dynamo_reference_vector(kv):
    got = kv.compute_block_hash_for_seq(DYNAMO_TOKENS, 4)
    assert type(got) is list and all(type(h) is int for h in got)
    assert got == DYNAMO_LOCAL
    assert kv.compute_block_hash_for_seq_py(DYNAMO_TOKENS, 4) == DYNAMO_LOCAL
    seq = kv.compute_seq_hash_for_block(got)
    assert type(seq) is list and seq == DYNAMO_SEQ


def test_positional_arguments_in_dynamo_order(kv):
    mm = [{"mm_objects": [{"mm_hash": 5, "offsets": [[0, 2]]}]}, None]
    a = kv.compute_block_hash_for_seq(DYNAMO_TOKENS, 4, mm, "lora", False, "ns")
    b = kv.compute_block_hash_for_seq(
        tokens=DYNAMO_TOKENS, kv_block_size=4, block_mm_infos=mm, lora_name="lora", is_eagle=False, cache_namespace="ns"
    )
    assert a == b
    c = kv.block_hashes(DYNAMO_TOKENS, 4, lora_name="lora", cache_namespace="ns", mm_hashes=[[5], None])
    assert a == c.tolist()
    assert a != kv.compute_block_hash_for_seq(DYNAMO_TOKENS, 4)


def test_block_size_zero_message(kv):
    with pytest.raises(ValueError, match=r"^kv_block_size cannot be 0$"):
        kv.compute_block_hash_for_seq(DYNAMO_TOKENS, 0)
    with pytest.raises(ValueError, match=r"^kv_block_size cannot be 0$"):
        kv.compute_block_hash_for_seq_py([], 0)


def test_block_mm_infos_entries(kv):
    # None, missing and empty object lists all mean "no media".
    plain = kv.compute_block_hash_for_seq(DYNAMO_TOKENS, 4)
    assert kv.compute_block_hash_for_seq(DYNAMO_TOKENS, 4, block_mm_infos=[None, {"mm_objects": []}]) == plain
    assert kv.compute_block_hash_for_seq(DYNAMO_TOKENS, 4, block_mm_infos=[]) == plain
    two = kv.compute_block_hash_for_seq(
        DYNAMO_TOKENS, 4, block_mm_infos=[{"mm_objects": [{"mm_hash": 9}, {"mm_hash": 2**64 - 1}]}]
    )
    swapped = kv.compute_block_hash_for_seq(
        DYNAMO_TOKENS, 4, block_mm_infos=[{"mm_objects": [{"mm_hash": 2**64 - 1}, {"mm_hash": 9}]}]
    )
    assert two == swapped  # the library sorts a block's media hashes
    assert two[0] != plain[0] and two[1:] == plain[1:]


def test_radix_tree_dynamo_flow(kv):
    tree = kv.RadixTree()
    local = kv.compute_block_hash_for_seq(DYNAMO_TOKENS, 4)
    tree.apply_event(7, stored(1, [(100, local[0]), (101, local[1])]))
    tree.apply_event(8, stored(1, [(200, local[0])], dp_rank=1))
    scores = tree.find_matches(local)
    assert isinstance(scores, kvhash.OverlapScores)
    assert scores.scores == {(7, 0): 2, (8, 1): 1}
    assert all(type(k) is tuple and all(type(x) is int for x in k) for k in scores.scores)
    assert scores.tree_sizes == {(7, 0): 2, (8, 1): 1}
    assert scores.frequencies == []
    events = tree.dump_tree_as_events()
    assert type(events) is list and all(type(e) is str for e in events)
    assert all(isinstance(json.loads(e), dict) for e in events)
    tree.clear_all_blocks(7)
    assert tree.find_matches(local).scores == {(8, 1): 1}
    tree.remove_worker(8)
    assert tree.find_matches(local).scores == {}


def test_radix_tree_accepts_expiration(kv):
    tree = kv.RadixTree(expiration_duration_secs=30.0)
    assert tree.expiration_duration_secs == 30.0
    assert kv.RadixTree(None).expiration_duration_secs is None
    with pytest.raises(TypeError):
        kv.RadixTree("30")


def test_bad_json_is_value_error(kv):
    tree = kv.RadixTree()
    for bad in (b"", b"{", b"[]", b'{"event_id": 1}', b'{"event_id": 1, "data": "exploded"}', b"\xff"):
        with pytest.raises(ValueError) as err:
            tree.apply_event(1, bad)
        assert isinstance(err.value, kvhash.DecodeError), bad
        assert err.value.status == -4 and err.value.message


def test_rejected_event_is_runtime_error(kv):
    tree = kv.RadixTree(enforce=True)
    with pytest.raises(RuntimeError) as err:
        tree.apply_event(1, stored(1, [(5, 50)], parent=12345))
    assert isinstance(err.value, kvhash.RejectedError)
    assert err.value.status == -5
    assert "parent" in str(err.value).lower()
    # Removing a block the worker never stored is a violation too.
    with pytest.raises(RuntimeError):
        tree.apply_event(1, json.dumps({"event_id": 2, "data": {"removed": {"block_hashes": [999]}}}).encode())
