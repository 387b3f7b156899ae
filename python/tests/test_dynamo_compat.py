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


def _media(*hashes):
    return {"mm_objects": [{"mm_hash": h, "offsets": [[0, 2]]} for h in hashes]}


def test_block_mm_infos_entries(kv):
    # None and empty object lists mean "no media".
    plain = kv.compute_block_hash_for_seq(DYNAMO_TOKENS, 4)
    assert kv.compute_block_hash_for_seq(DYNAMO_TOKENS, 4, block_mm_infos=[None, {"mm_objects": []}]) == plain
    assert kv.compute_block_hash_for_seq(DYNAMO_TOKENS, 4, block_mm_infos=[]) == plain
    two = kv.compute_block_hash_for_seq(DYNAMO_TOKENS, 4, block_mm_infos=[_media(9, 2**64 - 1)])
    swapped = kv.compute_block_hash_for_seq(DYNAMO_TOKENS, 4, block_mm_infos=[_media(2**64 - 1, 9)])
    assert two == swapped  # the library sorts a block's media hashes
    assert two[0] != plain[0] and two[1:] == plain[1:]


@pytest.mark.parametrize("eagle", [False, True])
def test_block_mm_infos_past_the_full_blocks_are_ignored(kv, eagle):
    # Dynamo's helpers pass ceil(len(tokens) / block_size) entries: one more
    # than the full blocks whenever the prompt ends mid-block (issue 10,
    # item 14). Dynamo ignores the extra ones.
    tokens = DYNAMO_TOKENS[:10]
    n = kv.block_count(len(tokens), 4, is_eagle=eagle)
    infos = [_media(5), None, _media(7), _media(8), None]
    want = kv.block_hashes(tokens, 4, is_eagle=eagle, mm_hashes=[[5], None, [7], [8], None][:n]).tolist()
    got = kv.compute_block_hash_for_seq(tokens, 4, infos, None, eagle)
    assert got == want and len(got) == n
    assert got[0] != kv.compute_block_hash_for_seq(tokens, 4, None, None, eagle)[0]
    # Every entry is still checked, also those past the blocks, as Dynamo does.
    with pytest.raises(ValueError, match="mm_objects"):
        kv.compute_block_hash_for_seq(tokens, 4, [None, None, None, {}], None, eagle)
    # The buffer API keeps the library's rule: one entry a block at most.
    with pytest.raises(kvhash.InvalidArgumentError):
        kv.block_hashes(tokens, 4, is_eagle=eagle, mm_hashes=[None] * 5)


@pytest.mark.parametrize(
    "obj, exc",
    [
        ({"mm_hash": 5}, ValueError),  # Dynamo: missing field `offsets`
        ({"offsets": []}, ValueError),  # missing field `mm_hash`
        ({"mm_hash": 5, "offsets": None}, TypeError),
        ({"mm_hash": 5, "offsets": [[0, 1, 2]]}, ValueError),
        ({"mm_hash": 5, "offsets": [[0, -1]]}, OverflowError),
        ({"mm_hash": 5, "offsets": [[0, 1.5]]}, TypeError),
        ({"mm_hash": "5", "offsets": []}, TypeError),
        ({"mm_hash": -5, "offsets": []}, OverflowError),
        ({"mm_hash": 2**64, "offsets": []}, OverflowError),
        ({"mm_hash": None, "offsets": []}, TypeError),
    ],
)
def test_multimodal_objects_are_checked_as_dynamo_checks_them(kv, obj, exc):
    # Dynamo raises a bare Exception for all of these; kvhash raises a
    # subclass of it that says which problem it is (docs/api/python.md).
    with pytest.raises(exc):
        kv.compute_block_hash_for_seq(DYNAMO_TOKENS, 4, [{"mm_objects": [obj]}])
    with pytest.raises(TypeError):
        kv.compute_block_hash_for_seq(DYNAMO_TOKENS, 4, [{"mm_objects": None}])


def test_block_size_types_as_dynamo_reads_them(kv):
    # Dynamo's kv_block_size is unsigned: negative is OverflowError, a bool
    # is an int (True is 1, False is 0), beyond any prompt is no block.
    with pytest.raises(OverflowError):
        kv.compute_block_hash_for_seq(DYNAMO_TOKENS, -1)
    with pytest.raises(OverflowError):
        kv.compute_block_hash_for_seq(DYNAMO_TOKENS, 2**64)
    assert kv.compute_block_hash_for_seq(DYNAMO_TOKENS, True) == kv.compute_block_hash_for_seq(DYNAMO_TOKENS, 1)
    with pytest.raises(ValueError, match=r"^kv_block_size cannot be 0$"):
        kv.compute_block_hash_for_seq(DYNAMO_TOKENS, False)
    assert kv.compute_block_hash_for_seq(DYNAMO_TOKENS, 2**63) == []
    assert kv.compute_block_hash_for_seq(DYNAMO_TOKENS, 2**64 - 1) == []
    with pytest.raises(TypeError):
        kv.compute_block_hash_for_seq(DYNAMO_TOKENS, 4.0)
    with pytest.raises(TypeError):
        kv.compute_block_hash_for_seq(DYNAMO_TOKENS, 4, None, None, 1)  # is_eagle: a bool or None


def test_integer_buffers_of_any_width_are_tokens(kv):
    # Tokenizers return int64 arrays; Dynamo reads any integer sequence.
    import numpy as np

    for dtype in (np.int64, np.uint64, np.int32, np.uint16, np.uint8):
        assert kv.compute_block_hash_for_seq(np.arange(1, 13, dtype=dtype), 4) == DYNAMO_LOCAL
    with pytest.raises(OverflowError):
        kv.compute_block_hash_for_seq(np.array([1, -2, 3, 4], dtype=np.int64), 4)
    with pytest.raises(TypeError):
        kv.compute_block_hash_for_seq(np.arange(4, dtype=np.float64), 4)


def test_lora_name_to_id(kv):
    assert kv.lora_name_to_id is kvhash.lora_name_to_id
    assert _params(kv.lora_name_to_id) == [("lora_name", P.empty, P.POSITIONAL_OR_KEYWORD)]
    # Dynamo's own stability test value, and values read from dynamo.llm
    # 1.6.1 (test_dynamo_oracle compares many more, live).
    assert kv.lora_name_to_id("test_lora") == 1983627077
    assert kv.lora_name_to_id("") == 1979294118
    assert kv.lora_name_to_id("adapter-a") == 969475657
    assert kv.lora_name_to_id("x" * 1025) == kv.lora_name_to_id(lora_name="x" * 1025)
    for name in ("a", "é" * 700, "w" * 5000):
        assert 1 <= kv.lora_name_to_id(name) <= 2**31 - 1
    for bad in (None, 1, b"a", ["a"]):
        with pytest.raises(TypeError):
            kv.lora_name_to_id(bad)


def test_blake3_specification_values():
    from kvhash._blake3 import blake3

    assert blake3(b"").hex() == "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
    assert blake3(b"abc").hex() == "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"


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
