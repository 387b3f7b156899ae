package core

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An empty index must cost bytes, not a node page: a WASM instance holds
// tens of thousands of them in its 4 GiB (issue 10, item 1).
func TestEmptyIndexCostsBytesNotPages(t *testing.T) {
	const n = 2000
	keep := make([]*Index, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range keep {
		keep[i] = NewIndex(IndexOptions{Mode: ModeWarn})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perIndex := (after.HeapAlloc - before.HeapAlloc) / n
	assert.Less(t, perIndex, uint64(16<<10), "an empty index holds %d bytes", perIndex)
	runtime.KeepAlive(keep)
}

// Every id addresses its own node, and a node keeps its contents while
// the first page doubles and later pages are added.
func TestNodesKeepTheirContentsAsPagesGrow(t *testing.T) {
	var tr tree
	tr.init()
	const ids = 3*nodePageSize + 100
	for id := uint32(1); id < ids; id++ {
		require.Equal(t, id, tr.newNode(uint64(id), uint64(id)*7))
		// Every node made so far is still there after each growth step.
		if pageFull(id + 1) {
			for old := uint32(1); old <= id; old++ {
				require.Equal(t, uint64(old), tr.node(old).external, "node %d after node %d", old, id)
			}
		}
	}
	seen := map[*node]uint32{}
	for id := uint32(0); id < ids; id++ {
		p := tr.node(id)
		prev, dup := seen[p]
		require.False(t, dup, "ids %d and %d share a node", prev, id)
		seen[p] = id
		if id > 0 {
			require.Equal(t, uint64(id)*7, p.local, "id %d", id)
		}
	}
	assert.Equal(t, ids/nodePageSize+1, len(tr.pages))
}

// The first page grows 8, 16, ..., 4096; then whole pages follow.
func TestPageFullAtEachGrowthStep(t *testing.T) {
	var full []uint32
	for s := uint32(0); s <= 3*nodePageSize; s++ {
		if pageFull(s) {
			full = append(full, s)
		}
	}
	assert.Equal(t, []uint32{0, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 12288}, full)
}

// The memory figures (docs/index.md) count on these sizes: a node's
// fields fill 56 bytes exactly, a name slot 12.
func TestIndexRecordSizes(t *testing.T) {
	assert.Equal(t, uintptr(56), nodeBytes)
	assert.Equal(t, uintptr(12), unsafe.Sizeof(nameSlot{}))
}
