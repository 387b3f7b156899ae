"""The WASM module under wasmtime answers bad pointers, lying lengths, unknown
handles and a zero block size with error statuses, never a trap, and keeps
working afterwards.

The package never passes such arguments itself, so these tests call the
module's exports directly, as a host written from docs/wasm/embedding.md would.
"""

from __future__ import annotations

import os
import struct

import pytest
import wasmtime

OK, INVALID_ARGUMENT, UNKNOWN_HANDLE, OUT_OF_BOUNDS = 0, -1, -3, -7
PUBLIC_TOKENS = list(range(1, 13))
PUBLIC_LOCAL = [14643705804678351452, 16777012769546811212, 483935686894639516]


class Module:
    """A fresh instance of the compiled module."""

    def __init__(self, engine: wasmtime.Engine, module: wasmtime.Module) -> None:
        self.store = wasmtime.Store(engine)
        self.store.set_wasi(wasmtime.WasiConfig())
        linker = wasmtime.Linker(engine)
        linker.define_wasi()
        exports = linker.instantiate(self.store, module).exports(self.store)
        self.memory = exports["memory"]
        self.fn = {e.name: exports[e.name] for e in module.exports if e.name != "memory"}
        self.fn["_initialize"](self.store)

    def call(self, name: str, *args: int) -> int:
        return self.fn[name](self.store, *args)

    def alloc(self, data: bytes) -> int:
        ptr = self.call("kvhash_alloc", max(len(data), 1)) & 0xFFFFFFFF
        assert ptr != 0
        self.memory.write(self.store, data, ptr)
        return ptr

    def last_error(self) -> str:
        buf = self.alloc(bytes(512))
        n = self.call("kvhash_last_error", buf, 512)
        return bytes(self.memory.read(self.store, buf, buf + min(n, 511))).decode()

    def block_hashes(self, tokens_ptr: int, n_tokens: int, block_size: int, out: int, out_cap: int) -> int:
        out_len = self.alloc(bytes(4))
        return self.call("kvhash_block_hashes", tokens_ptr, n_tokens, block_size,
                         0, 0, 0, 0, 0, 0, 0, 0, out, out_cap, out_len)

    def public_vector_still_works(self) -> None:
        tokens = self.alloc(struct.pack("<12I", *PUBLIC_TOKENS))
        out = self.alloc(bytes(8 * 3))
        assert self.block_hashes(tokens, 12, 4, out, 3) == OK
        assert list(struct.unpack("<3Q", self.memory.read(self.store, out, out + 24))) == PUBLIC_LOCAL


@pytest.fixture(scope="module")
def compiled() -> tuple[wasmtime.Engine, wasmtime.Module]:
    engine = wasmtime.Engine()
    return engine, wasmtime.Module.from_file(engine, os.environ["KVHASH_WASM"])


@pytest.fixture
def module(compiled: tuple[wasmtime.Engine, wasmtime.Module]) -> Module:
    m = Module(*compiled)
    m.public_vector_still_works()
    return m


def test_pointer_outside_linear_memory(module: Module) -> None:
    out = module.alloc(bytes(24))
    beyond = module.memory.data_len(module.store) + 4096
    assert module.block_hashes(beyond, 12, 4, out, 3) == OUT_OF_BOUNDS
    assert "not inside a live allocation" in module.last_error()
    module.public_vector_still_works()


def test_pointer_into_memory_the_host_never_allocated(module: Module) -> None:
    out = module.alloc(bytes(24))
    assert module.block_hashes(64, 12, 4, out, 3) == OUT_OF_BOUNDS
    module.public_vector_still_works()


def test_length_that_lies(module: Module) -> None:
    tokens = module.alloc(struct.pack("<12I", *PUBLIC_TOKENS))
    out = module.alloc(bytes(24))
    assert module.block_hashes(tokens, 1 << 20, 4, out, 3) == OUT_OF_BOUNDS
    assert "run past the end" in module.last_error()
    out_small = module.alloc(bytes(8))
    assert module.block_hashes(tokens, 12, 4, out_small, 3) == OUT_OF_BOUNDS
    module.public_vector_still_works()


def test_freed_buffer(module: Module) -> None:
    tokens = module.alloc(struct.pack("<12I", *PUBLIC_TOKENS))
    out = module.alloc(bytes(24))
    module.call("kvhash_free", tokens)
    assert module.block_hashes(tokens, 12, 4, out, 3) == OUT_OF_BOUNDS
    module.public_vector_still_works()


def test_null_with_a_length_and_zero_block_size(module: Module) -> None:
    out = module.alloc(bytes(24))
    assert module.block_hashes(0, 12, 4, out, 3) == INVALID_ARGUMENT
    tokens = module.alloc(struct.pack("<12I", *PUBLIC_TOKENS))
    assert module.block_hashes(tokens, 12, 0, out, 3) == INVALID_ARGUMENT
    assert "block size" in module.last_error()
    module.public_vector_still_works()


def test_unknown_and_freed_handles(module: Module) -> None:
    assert module.call("kvhash_index_free", 424242) == UNKNOWN_HANDLE
    handle_out = module.alloc(bytes(8))
    assert module.call("kvhash_index_new", 1, handle_out) == OK
    (handle,) = struct.unpack("<Q", module.memory.read(module.store, handle_out, handle_out + 8))
    assert module.call("kvhash_index_free", handle) == OK
    assert module.call("kvhash_index_remove_worker", handle, 7) == UNKNOWN_HANDLE
    assert module.call("kvhash_index_free", handle) == UNKNOWN_HANDLE
    module.public_vector_still_works()
