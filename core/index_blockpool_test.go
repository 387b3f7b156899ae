package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every n gets the smallest class with room for it, classes are 2^k and
// 3*2^(k-1) in increasing order, and a third is wasted at most.
func TestBlockClasses(t *testing.T) {
	prevClass, prevSize := -1, 0
	for n := 1; n <= 1<<14; n++ {
		c, size := blockClass(n)
		require.GreaterOrEqual(t, size, n)
		if n > blockClassMin {
			require.LessOrEqual(t, 3*(size-n), size, "n %d gets %d", n, size)
		}
		if size != prevSize {
			require.Equal(t, prevClass+1, c, "n %d", n)
			require.Equal(t, prevSize+1 <= n, true)
			prevClass, prevSize = c, size
		}
		require.Less(t, c, blockClasses)
	}
	assert.Equal(t, []int{8, 12, 16, 24, 32, 48}, func() (out []int) {
		for _, n := range []int{1, 9, 13, 17, 25, 33} {
			_, s := blockClass(n)
			out = append(out, s)
		}
		return
	}())
}

// Arrays handed back are handed out again, up to the limit.
func TestBlockPoolRecycles(t *testing.T) {
	var p blockPool
	a := p.get(100)
	require.Equal(t, 128, cap(a.locals))
	require.Equal(t, 128, cap(a.exts))
	a.locals = append(a.locals, 1, 2, 3)
	p.put(a, 1000)
	b := p.get(97)
	assert.Same(t, &a.locals[:1][0], &b.locals[:1][0], "the same array again")
	assert.Empty(t, b.locals)
	p.put(b, 100) // over the limit: dropped
	assert.Zero(t, p.pooled)
	p.put(blockArrays{make([]uint64, 0, 100), make([]uint64, 0, 100)}, 1000) // not a class size
	assert.Zero(t, p.pooled)
}

// A pool whose free list of a class is empty asks for a spare, which a
// store's writer makes before taking the lock (makeSpare), and the next
// get of that class or the one below takes it instead of allocating
// under the lock; a short store makes none, a much smaller get leaves it.
func TestBlockPoolSpareIsMadeOffTheLock(t *testing.T) {
	var p blockPool
	assert.Empty(t, p.makeSpare(100).locals, "nothing asked for a spare yet")
	p.get(100)
	require.True(t, p.wantSpare.Load(), "a get that allocated asks for a spare")
	assert.Empty(t, p.makeSpare(spareMin-1).locals, "a short store makes no spare")
	a := p.makeSpare(100)
	require.Equal(t, 128, cap(a.locals))
	p.holdSpare(a, 1<<20)
	assert.False(t, p.wantSpare.Load())
	assert.Equal(t, 8, cap(p.get(3).locals), "a much smaller get leaves the spare")
	got := p.get(70)
	require.Same(t, &a.locals[:1][0], &got.locals[:1][0], "the get took the spare")
	assert.True(t, p.wantSpare.Load(), "the spare taken, another is asked for")
	assert.Empty(t, p.spare.locals)
}

// A store longer than a write section has its segment sized for all of
// it by the first section: the later sections extend it without copying.
func TestLongStoreSegmentIsSizedOnce(t *testing.T) {
	x := NewIndex(IndexOptions{Mode: ModeWarn})
	x.writeSection = 128
	require.NoError(t, x.ApplyStored(Worker{ID: 1}, 1, nil, chain(512, 1<<20)))
	require.Equal(t, 2, x.t.segs.len(), "one segment (and the unused segment 0)")
	s := x.t.segs.at(1)
	assert.Equal(t, 512, len(s.locals))
	assert.Equal(t, 512, cap(s.locals))
	assert.Zero(t, x.t.pool.pooled, "no array was outgrown (and handed back to the pool) section by section")
}
