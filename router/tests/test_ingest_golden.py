"""Drift guard for router/ingest's golden payloads.

The Go decoder's tests read router/ingest/testdata/golden/: engine payloads
that msgspec wrote over structs declared as vLLM and SGLang declare theirs,
beside the fields they hold. Regenerating them must give the same bytes: a
change of msgspec, of the declared structs or of the cases shows up here,
not as a silent change of what the decoder is tested against.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

TESTDATA = Path(__file__).resolve().parents[1] / "ingest" / "testdata"
GOLDEN = TESTDATA / "golden"


def load(name: str) -> ModuleType:
    sys.path.insert(0, str(TESTDATA))
    spec = importlib.util.spec_from_file_location(name, TESTDATA / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


gen = load("gen_golden")
wire = load("vllm_wire")


def test_golden_files_are_unchanged(tmp_path: Path) -> None:
    written = gen.write(tmp_path)
    names = sorted(p.name for p in written)
    committed = sorted(p.name for p in GOLDEN.iterdir())
    assert names == committed, "golden files added or removed: rerun gen_golden.py and commit"
    for p in written:
        assert p.read_bytes() == (GOLDEN / p.name).read_bytes(), f"{p.name} drifted: rerun gen_golden.py"


def test_array_layout_carries_every_field() -> None:
    """What older vLLM sends: tag first, every field in declaration order
    (msgspec writes defaults in array-like structs despite omit_defaults),
    in a 2-element batch."""
    ev = wire.ArrayBlockStored(
        block_hashes=[1], parent_block_hash=None, token_ids=[5], block_size=16, lora_id=None, medium="GPU"
    )
    assert msgspec.msgpack.decode(wire.encode(wire.LegacyArrayBatch(ts=1.0, events=[ev]))) == [
        1.0,
        [["BlockStored", [1], None, [5], 16, None, "GPU"] + [None] * 9],
    ]


def test_map_layout_puts_the_tag_first() -> None:
    ev = wire.MapBlockRemoved(block_hashes=[b"\x00" * 32], medium="GPU")
    raw = msgspec.msgpack.decode(wire.encode(wire.ArrayBatch(ts=2.0, events=[ev], data_parallel_rank=1)))
    assert raw[2] == 1
    assert list(raw[1][0].keys())[0] == "type"
    assert raw[1][0]["type"] == "BlockRemoved"


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.integers(-(2**63), 2**64 - 1), st.binary(max_size=40)))
def test_wire_hash_is_the_u64_a_router_reads(h: int | bytes) -> None:
    """Ints keep their bits; bytes give their last 8 bytes, big-endian."""
    got = wire.wire_hash(h)
    assert 0 <= got < 2**64
    if isinstance(h, int):
        assert got == h % 2**64
    else:
        assert got == int.from_bytes(h[-8:], "big")
