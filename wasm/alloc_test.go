package main

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/internal/abi"
)

// table returns an allocation table with buffers of the given sizes at the
// given (made-up) bases; host addresses are not 32-bit, so the bases are
// chosen by the test, as kvhash_alloc takes them from linear memory.
func table(t *testing.T, allocs map[uint32]int) (*allocTable, map[uint32][]byte) {
	t.Helper()
	var tb allocTable
	bufs := map[uint32][]byte{}
	for base, size := range allocs {
		b := make([]byte, size)
		require.NoError(t, tb.add(base, b, b))
		bufs[base] = b
	}
	return &tb, bufs
}

func TestAllocTableSlice(t *testing.T) {
	tb, bufs := table(t, map[uint32]int{0x1000: 64, 0x2000: 16, 0x3000: 0, math.MaxUint32 - 8: 8})
	tests := []struct {
		name   string
		ptr    uint32
		n      uint64
		status abi.Status
		base   uint32 // the allocation the slice must alias
		off    int
	}{
		{"whole", 0x1000, 64, abi.StatusOK, 0x1000, 0},
		{"interior", 0x1010, 16, abi.StatusOK, 0x1000, 16},
		{"tail", 0x103F, 1, abi.StatusOK, 0x1000, 63},
		{"one past the end", 0x1000, 65, abi.StatusOutOfBounds, 0, 0},
		{"starts at the end", 0x1040, 1, abi.StatusOutOfBounds, 0, 0},
		{"between allocations", 0x1800, 4, abi.StatusOutOfBounds, 0, 0},
		{"below every allocation", 0x10, 4, abi.StatusOutOfBounds, 0, 0},
		{"zero-size allocation", 0x3000, 1, abi.StatusOutOfBounds, 0, 0},
		{"NULL with a length", 0, 4, abi.StatusInvalidArgument, 0, 0},
		{"empty is fine anywhere", 0xDEAD, 0, abi.StatusOK, 0, 0},
		{"NULL and empty", 0, 0, abi.StatusOK, 0, 0},
		{"top of memory", math.MaxUint32 - 8, 8, abi.StatusOK, math.MaxUint32 - 8, 0},
		{"past 4 GiB", math.MaxUint32 - 8, 9, abi.StatusOutOfBounds, 0, 0},
		{"huge length", 0x1000, math.MaxUint64, abi.StatusOutOfBounds, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a abi.Args
			got := tb.slice(&a, tt.ptr, tt.n, "arg")
			assert.Equal(t, tt.status, abi.StatusOf(a.Err), "%v", a.Err)
			if tt.status != abi.StatusOK || tt.n == 0 {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, int(tt.n))
			assert.Same(t, &bufs[tt.base][tt.off], &got[0], "a view of the allocation, not a copy")
			assert.Equal(t, int(tt.n), cap(got), "the view cannot be grown past its end")
		})
	}
}

func TestAllocTableFree(t *testing.T) {
	tb, _ := table(t, map[uint32]int{0x1000: 64, 0x2000: 16})
	assert.Equal(t, uint64(80), tb.bytes)
	assert.Equal(t, abi.StatusOutOfBounds, abi.StatusOf(tb.remove(0x1008)), "an interior pointer is not an allocation")
	assert.Equal(t, abi.StatusOutOfBounds, abi.StatusOf(tb.remove(0x5000)))
	require.NoError(t, tb.remove(0x1000))
	assert.Equal(t, abi.StatusOutOfBounds, abi.StatusOf(tb.remove(0x1000)), "double free")
	assert.Equal(t, uint64(16), tb.bytes)

	var a abi.Args
	tb.slice(&a, 0x1000, 1, "freed")
	assert.Equal(t, abi.StatusOutOfBounds, abi.StatusOf(a.Err), "use after free")
	a = abi.Args{}
	assert.Len(t, tb.slice(&a, 0x2000, 16, "kept"), 16)
	assert.NoError(t, a.Err)
}

func TestAllocTableLimits(t *testing.T) {
	var tb allocTable
	assert.NoError(t, tb.room(maxLive))
	assert.Equal(t, abi.StatusNoMemory, abi.StatusOf(tb.room(maxLive+1)))
	b := make([]byte, 8)
	require.NoError(t, tb.add(0x100, b, b))
	assert.Equal(t, abi.StatusNoMemory, abi.StatusOf(tb.room(maxLive-7)))
	assert.Equal(t, abi.StatusInternal, abi.StatusOf(tb.add(0x104, b, b)), "overlap is a bug")
}

func TestViewsAndOutputs(t *testing.T) {
	tb, bufs := table(t, map[uint32]int{0x1000: 16})
	var a abi.Args
	u64 := view[uint64](tb, &a, 0x1000, 2, "hashes")
	require.NoError(t, a.Err)
	u64[1] = 0x0102030405060708
	assert.Equal(t, byte(0x08), bufs[0x1000][8], "little-endian view of linear memory")

	view[uint64](tb, &a, 0x1000, 3, "hashes")
	assert.Equal(t, abi.StatusOutOfBounds, abi.StatusOf(a.Err))

	a = abi.Args{}
	assert.Equal(t, "", str(tb, &a, 0, 0, "lora"))
	copy(bufs[0x1000], "lora")
	assert.Equal(t, "lora", str(tb, &a, 0x1000, 4, "lora"))
	require.NoError(t, a.Err)

	p := out[uint32](tb, &a, 0x100C, "out_len")
	require.NotNil(t, p)
	setLen(p, 7)
	assert.Equal(t, []byte{7, 0, 0, 0}, bufs[0x1000][12:])
	assert.Nil(t, out[uint32](tb, &a, 0x100E, "out_len"), "straddles the end")
	assert.Equal(t, abi.StatusOutOfBounds, abi.StatusOf(a.Err))
	a = abi.Args{}
	assert.Nil(t, out[uint64](tb, &a, 0, "out_handle"))
	assert.Equal(t, abi.StatusInvalidArgument, abi.StatusOf(a.Err))
	setLen(nil, 1) // no output pointer: nothing to write, no crash

	a = abi.Args{}
	assert.Zero(t, mmLen(&a, []uint32{math.MaxUint32, 2}))
	assert.Equal(t, abi.StatusOutOfBounds, abi.StatusOf(a.Err))
}

func TestReport(t *testing.T) {
	lastError = ""
	assert.Equal(t, int32(0), fail(nil))
	assert.Empty(t, lastError)
	assert.Equal(t, int32(abi.StatusBufferTooSmall), fail(abi.ErrBufferTooSmall))
	assert.Equal(t, "buffer too small", lastError)

	var st int32
	func() {
		defer catch(&st)
		panic("boom")
	}()
	assert.Equal(t, int32(abi.StatusInternal), st)
	assert.Contains(t, lastError, "boom")

	v := uint64(9)
	func() {
		defer catchValue(&v)
		panic("bang")
	}()
	assert.Zero(t, v)
	assert.Contains(t, lastError, "bang")
}

// The last-hit cache must never answer for an allocation that moved in the
// table or was freed.
func TestAllocTableHitCacheAfterFree(t *testing.T) {
	tb, bufs := table(t, map[uint32]int{0x1000: 16, 0x2000: 16, 0x3000: 16})
	var a abi.Args
	b := tb.slice(&a, 0x3004, 4, "x")
	require.NoError(t, a.Err)
	assert.Same(t, &bufs[0x3000][4], &b[0])

	require.NoError(t, tb.remove(0x1000)) // 0x3000 moves from index 2 to 1
	b = tb.slice(&a, 0x3004, 4, "x")
	require.NoError(t, a.Err)
	assert.Same(t, &bufs[0x3000][4], &b[0])

	require.NoError(t, tb.remove(0x3000)) // the cached index now holds nothing
	tb.slice(&a, 0x3004, 4, "x")
	require.ErrorIs(t, a.Err, abi.ErrOutOfBounds)

	a = abi.Args{}
	b = tb.slice(&a, 0x2008, 8, "x")
	require.NoError(t, a.Err)
	assert.Same(t, &bufs[0x2000][8], &b[0])
}
