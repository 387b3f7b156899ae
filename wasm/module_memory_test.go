package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/kvhash/kvhash/internal/abi"
)

var capped struct {
	once     sync.Once
	runtime  wazero.Runtime
	compiled wazero.CompiledModule
	err      error
}

// cappedInstance runs the module in a runtime whose linear memory cannot
// grow past minMemoryLimit bytes, with the module told so: if the budget
// let the Go heap run into the cap, the runtime would abort and the call
// trap. The runtime and its compiled module are shared (compiling takes
// seconds under the race detector).
func cappedInstance(t *testing.T) *instance {
	t.Helper()
	ctx := context.Background()
	capped.once.Do(func() {
		bin, err := os.ReadFile(wasmPath())
		if err != nil {
			capped.err = fmt.Errorf("%w (build it with `make build/kvhash.wasm`)", err)
			return
		}
		capped.runtime = wazero.NewRuntimeWithConfig(ctx,
			wazero.NewRuntimeConfigInterpreter().WithMemoryLimitPages(minMemoryLimit>>16))
		wasi_snapshot_preview1.MustInstantiate(ctx, capped.runtime)
		capped.compiled, capped.err = capped.runtime.CompileModule(ctx, bin)
	})
	require.NoError(t, capped.err)
	mod, err := capped.runtime.InstantiateModule(ctx, capped.compiled, wazero.NewModuleConfig().WithName("").
		WithStartFunctions().WithEnv(MemoryLimitEnv, strconv.Itoa(minMemoryLimit)))
	require.NoError(t, err)
	t.Cleanup(func() { mod.Close(ctx) })
	in := &instance{t: t, ctx: ctx, mod: mod}
	in.call("_initialize")
	return in
}

func (in *instance) newIndex() (uint64, abi.Status) {
	in.t.Helper()
	out := in.alloc(8)
	defer in.call("kvhash_free", out)
	st := in.status("kvhash_index_new", 1, out)
	return binary.LittleEndian.Uint64(in.read(out, 8)), st
}

// Filling the module's memory gives KVHASH_ERR_NO_MEMORY, never a trap;
// the instance keeps hashing and serving its indexes, and freeing makes
// room again (issue 10, item 1).
func TestModuleMemoryExhaustionIsAStatus(t *testing.T) {
	const limit = minMemoryLimit
	in := cappedInstance(t)
	idx, st := in.newIndex()
	require.Equal(t, abi.StatusOK, st)
	// A full module cannot allocate the buffer lastError would: one made
	// now receives the messages.
	msgBuf := in.alloc(1024)
	lastError := func() string {
		n := int32(uint32(in.call("kvhash_last_error", msgBuf, 1024)[0]))
		require.GreaterOrEqual(t, n, int32(0))
		return string(in.read(msgBuf, int(min(n, 1023))))
	}
	handle := in.alloc(8)
	// Block hashes 1..n, made before the module is full.
	const maxBlocks = 10_000
	hashes := make([]uint64, maxBlocks)
	for i := range hashes {
		hashes[i] = uint64(i + 1)
	}
	bh := in.putU64s(hashes)
	stored := func(worker uint64, n int) abi.Status {
		return in.status("kvhash_index_apply_stored", idx, worker, 0, 1, 0, 0, bh, bh, uint64(n))
	}
	require.Equal(t, abi.StatusOK, stored(7, 100))
	tokens := in.putU32s([]uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	out, outLen := in.alloc(24), in.alloc(4)
	q := in.putU64s([]uint64{1, 2, 3})
	ids, ranks, scores, sizes, n := in.alloc(8), in.alloc(4), in.alloc(4), in.alloc(8), in.alloc(4)

	// Host buffers of 4 MiB, then smaller ones, until the module refuses
	// even 8 KiB.
	var bufs []uint64
	for _, size := range []uint64{4 << 20, 256 << 10, 8 << 10} {
		for range limit / size {
			p := uint32(in.call("kvhash_alloc", size)[0])
			if p == 0 {
				assert.Contains(t, lastError(), "KVHASH_WASM_MEMORY_LIMIT")
				break
			}
			bufs = append(bufs, uint64(p))
		}
	}
	require.Less(t, len(bufs), limit/(4<<20)+64, "the module never refused an allocation")

	// Growing calls are refused with a status; nothing traps.
	assert.Equal(t, abi.StatusNoMemory, in.status("kvhash_index_new", 1, handle), lastError())
	assert.Contains(t, lastError(), "a new index needs about")

	assert.Equal(t, abi.StatusNoMemory, stored(8, maxBlocks), lastError())
	assert.Contains(t, lastError(), "applying a stored event")

	// Hashing and queries still work, and the index kept its blocks.
	require.Equal(t, abi.StatusOK, in.status("kvhash_block_hashes", tokens, 12, 4, 0, 0, 0, 0, 0, 0, 0, 0, out, 3, outLen))
	assert.Equal(t, []uint64{14643705804678351452, 16777012769546811212, 483935686894639516}, in.u64s(out, 3))
	require.Equal(t, abi.StatusOK, in.status("kvhash_index_find_matches", idx, q, 1, 0, ids, ranks, scores, sizes, 1, n))
	assert.Equal(t, uint32(1), in.u32(n))
	assert.Equal(t, uint64(100), in.u64s(sizes, 1)[0], "the index kept its 100 blocks")

	// Freeing the buffers makes room again.
	for _, p := range bufs {
		in.call("kvhash_free", p)
	}
	assert.Equal(t, abi.StatusOK, in.status("kvhash_index_new", 1, handle), lastError())
	assert.Equal(t, abi.StatusOK, stored(8, maxBlocks), lastError())
}

// Many live indexes cost little each: 500 fit in a module of 64 MiB
// (issue 10, item 1: each used to take a 229 KB page, 115 MB in all).
// The bindings' tests create 40,000 through a compiling runtime; the
// interpreter these tests use takes a millisecond an index.
func TestModuleManyEmptyIndexes(t *testing.T) {
	in := cappedInstance(t)
	out := in.alloc(8)
	for i := range 500 {
		st := in.status("kvhash_index_new", 1, out)
		require.Equal(t, abi.StatusOK, st, "index %d: %s", i, in.lastError())
	}
	tokens := in.putU32s([]uint32{1, 2, 3, 4})
	hashes, outLen := in.alloc(8), in.alloc(4)
	require.Equal(t, abi.StatusOK, in.status("kvhash_block_hashes", tokens, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0, hashes, 1, outLen))
	assert.Equal(t, uint64(14643705804678351452), in.u64s(hashes, 1)[0])
}
