"""A WASM instance capped below 4 GiB refuses what would not fit with
kvhash.NoMemoryError (KVHASH_ERR_NO_MEMORY, a MemoryError), never a trap:
the instance keeps its trees, keeps hashing, and freeing makes room again.

The cap goes to the module as wasm/budget.go expects: the store's memory
limit plus KVHASH_WASM_MEMORY_LIMIT in the module's WASI environment
(WasmBackend(memory_limit=...)), as bindings/go/wasmhost's Config.MemoryLimit
does. 64 MiB, the smallest cap the module takes, fills in about a second.
"""

from __future__ import annotations

from array import array
from typing import Any, List, Tuple

import pytest

import kvhash
from kvhash import _api
from kvhash._errors import ERR_NO_MEMORY, KvHashError, error_for
from kvhash.wasm import WasmBackend

LIMIT = 64 << 20
PUBLIC_TOKENS = list(range(1, 13))
PUBLIC_LOCAL = [14643705804678351452, 16777012769546811212, 483935686894639516]
BLOCKS_PER_STORE = 20_000


@pytest.fixture(scope="module")
def capped() -> _api.API:
    return _api.API(WasmBackend(memory_limit=LIMIT))


def _fill(capped: _api.API) -> Tuple[List[Any], kvhash.NoMemoryError]:
    """Trees filled with stores until the module refuses one: the trees
    (all still open) and the refusal."""
    hashes = array("Q", range(1, BLOCKS_PER_STORE + 1))
    trees: List[Any] = []
    for _ in range(100):
        tree = capped.RadixTree(enforce=False)
        trees.append(tree)
        for worker in range(8):
            try:
                tree.apply_stored(worker, hashes, hashes)
            except kvhash.NoMemoryError as e:
                return trees, e
    pytest.fail("a %d MiB instance never filled" % (LIMIT >> 20))


def test_no_memory_status_maps_to_a_memory_error() -> None:
    e = error_for(ERR_NO_MEMORY, "index_apply_stored: over budget")
    assert type(e) is kvhash.NoMemoryError
    assert isinstance(e, MemoryError) and isinstance(e, KvHashError)
    assert (e.status, e.message) == (ERR_NO_MEMORY, "index_apply_stored: over budget")
    # No message from the library: the status's name, not an empty string.
    assert str(error_for(ERR_NO_MEMORY, "")) == "KVHASH_ERR_NO_MEMORY"


def test_a_full_instance_refuses_keeps_its_trees_and_keeps_hashing(capped: _api.API) -> None:
    trees, full = _fill(capped)
    assert (full.status, str(full)) == (ERR_NO_MEMORY, full.message)
    assert "memory" in full.message, full.message
    assert isinstance(full, MemoryError)

    # The stores before the refusal are whole.
    first = trees[0]
    got = first.find_matches(array("Q", range(1, 11)))
    assert got.scores[(0, 0)] == 10
    assert got.tree_sizes[(0, 0)] == BLOCKS_PER_STORE

    # An argument too big for the room left: the arena cannot grow, and
    # the refusal carries the module's own message (kvhash_alloc's).
    with pytest.raises(kvhash.NoMemoryError, match="kvhash_alloc") as big:
        capped.block_hashes(array("I", bytes(LIMIT // 2)), 16)
    assert big.value.status == ERR_NO_MEMORY

    # Hashing still works, with the public vector's answer.
    assert capped.compute_block_hash_for_seq(PUBLIC_TOKENS, 4) == PUBLIC_LOCAL

    # Freeing the trees makes room: a new tree takes a store again.
    for tree in trees:
        tree.close()
    again = capped.RadixTree(enforce=False)
    hashes = array("Q", range(1, BLOCKS_PER_STORE + 1))
    again.apply_stored(0, hashes, hashes)
    assert again.find_matches(array("Q", range(1, 6))).scores == {(0, 0): 5}
