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
