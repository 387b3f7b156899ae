package core

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// An empty index must cost bytes, not pages: a WASM instance holds tens
// of thousands of them in its 4 GiB (issue 10, item 1).
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
	// 40,000 must fit a 256 MiB WASM instance with its headroom (wasmhost).
	assert.Less(t, perIndex, uint64(4<<10), "an empty index holds %d bytes", perIndex)
	t.Logf("an empty index: %d bytes", perIndex)
	runtime.KeepAlive(keep)
}

// The memory figures (docs/index.md) count on these sizes: a name table's
// half is one cache line (seven 8-byte slots and their control word), a
// child table's group two, a holder 8 bytes, a run 80.
func TestIndexRecordSizes(t *testing.T) {
	assert.Equal(t, uintptr(64), unsafe.Sizeof(nameHalf{}))
	assert.Equal(t, uintptr(128), unsafe.Sizeof(hashGroup{}))
	assert.Equal(t, uintptr(8), unsafe.Sizeof(holder{}))
	assert.Equal(t, uintptr(80), unsafe.Sizeof(run{}))
}
