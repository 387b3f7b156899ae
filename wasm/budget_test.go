package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/internal/abi"
)

func TestParseMemoryLimit(t *testing.T) {
	tests := []struct {
		in       string
		want     uint64
		wantNote bool
	}{
		{"", wasm32Memory, false},
		{"  ", wasm32Memory, false},
		{"1073741824", 1 << 30, false},
		{" 268435456 ", 256 << 20, false},
		{"8589934592", wasm32Memory, false}, // more than wasm32 has
		{"1000", minMemoryLimit, true},
		{"1GiB", wasm32Memory, true},
		{"-5", wasm32Memory, true},
		{"0x1000000", wasm32Memory, true},
	}
	for _, tt := range tests {
		got, note := parseMemoryLimit(tt.in)
		assert.Equal(t, tt.want, got, "%q", tt.in)
		assert.Equal(t, tt.wantNote, note != "", "%q: note %q", tt.in, note)
	}
}

// budgetOver is a budget whose heap is the heap variable, and a
// collection frees garbage bytes of it.
func budgetOver(limit uint64, heap, garbage *uint64) (*memoryBudget, *int) {
	collections := 0
	return &memoryBudget{
		limit: limit,
		heap:  func() uint64 { return *heap },
		collect: func() {
			collections++
			*heap -= *garbage
			*garbage = 0
		},
	}, &collections
}

func TestBudgetAdmits(t *testing.T) {
	const limit = 800 << 20 // admits 500 MiB of heap
	heap, garbage := uint64(100<<20), uint64(0)
	b, collections := budgetOver(limit, &heap, &garbage)
	require.Equal(t, uint64(500<<20), b.admitted())

	assert.NoError(t, b.admit(400<<20, "fits exactly"))
	assert.Zero(t, *collections, "a request that fits never collects")

	err := b.admit(400<<20+1, "one byte too many")
	assert.Equal(t, abi.StatusNoMemory, abi.StatusOf(err))
	assert.Contains(t, err.Error(), "one byte too many needs about")
	assert.Contains(t, err.Error(), MemoryLimitEnv)
	assert.Equal(t, 1, *collections, "refused only after a collection")

	heap = 100 << 20
	assert.NoError(t, b.admit(1, "after the heap shrank"), "a refused budget reads the heap again")
	assert.Equal(t, abi.StatusNoMemory, abi.StatusOf(b.admit(1<<62, "absurd")), "no overflow")
	assert.Equal(t, abi.StatusNoMemory, abi.StatusOf(b.admit(^uint64(0), "max")), "no overflow")
}

func TestBudgetCollectsGarbageBeforeRefusing(t *testing.T) {
	heap, garbage := uint64(490<<20), uint64(300<<20)
	b, collections := budgetOver(800<<20, &heap, &garbage)
	require.NoError(t, b.admit(100<<20, "after collecting"))
	assert.Equal(t, 1, *collections)
	assert.Equal(t, uint64(190<<20), heap)
}

// Far from the limit the heap is read once, then requests are counted
// against that reading; it is read again only when their sum could pass
// the limit, and then it is what the heap holds that counts.
func TestBudgetReadsTheHeapOnlyNearTheLimit(t *testing.T) {
	heap, reads := uint64(100<<20), 0
	b := &memoryBudget{limit: 800 << 20, heap: func() uint64 { reads++; return heap }, collect: func() {}}
	for range 399 {
		require.NoError(t, b.admit(1<<20, "a megabyte"))
	}
	assert.Equal(t, 1, reads, "399 MiB of requests on a 100 MiB heap fit without reading it again")
	require.NoError(t, b.admit(1<<20, "the 400th"))
	assert.Equal(t, 1, reads)
	// The requests were estimates: the heap grew by half of them.
	heap += 200 << 20
	require.NoError(t, b.admit(1<<20, "the 401st"))
	assert.Equal(t, 2, reads, "the sum passed the limit: read the heap")
	assert.Equal(t, uint64(300<<20), b.known)
	assert.Equal(t, uint64(1<<20), b.pending)
}

func TestBudgetNoteOfABadLimit(t *testing.T) {
	limit, note := parseMemoryLimit("lots")
	heap, garbage := uint64(limit), uint64(0)
	b, _ := budgetOver(limit, &heap, &garbage)
	b.limitErr = note
	err := b.admit(1, "x")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"lots" is not a byte count`)
}

// The real runtime reading: a fresh process is far below any limit.
func TestRuntimeBudget(t *testing.T) {
	b := newMemoryBudget(wasm32Memory, "")
	assert.NoError(t, b.admit(1<<20, "a megabyte"))
	assert.Equal(t, abi.StatusNoMemory, abi.StatusOf(b.admit(wasm32Memory, "4 GiB")))
}

// FuzzBudgetAdmit drives a budget with arbitrary heap sizes and requests:
// whatever it admits keeps the heap it knows of, plus what it admitted
// since, within the admitted size, and what it refuses is
// KVHASH_ERR_NO_MEMORY.
func FuzzBudgetAdmit(f *testing.F) {
	f.Add(uint64(800<<20), uint64(100<<20), uint64(1<<20), uint64(0), uint8(7))
	f.Add(uint64(minMemoryLimit), uint64(0), uint64(1<<62), uint64(5), uint8(1))
	f.Add(uint64(wasm32Memory), uint64(3<<30), ^uint64(0), uint64(1<<30), uint8(200))
	f.Fuzz(func(t *testing.T, limit, heap, need, garbage uint64, rounds uint8) {
		limit = max(limit%(wasm32Memory+1), minMemoryLimit)
		garbage = min(garbage, heap)
		b, _ := budgetOver(limit, &heap, &garbage)
		for i := range int(rounds%16) + 1 {
			n := need >> (i % 64)
			err := b.admit(n, "fuzz")
			if err != nil {
				require.Equal(t, abi.StatusNoMemory, abi.StatusOf(err))
				continue
			}
			require.LessOrEqual(t, b.known, b.admitted())
			require.LessOrEqual(t, b.pending, b.admitted()-b.known)
			heap += n / 2 // the estimate was generous
		}
	})
}
