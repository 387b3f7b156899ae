package freelist

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestListKeepsUpToItsCapacityAcrossCollections(t *testing.T) {
	l := New[*int](2)
	_, ok := l.Get()
	assert.False(t, ok, "empty")
	a, b, c := new(int), new(int), new(int)
	l.Put(a)
	l.Put(b)
	l.Put(c) // full: dropped
	runtime.GC()
	runtime.GC() // sync.Pool would be empty by now
	got := map[*int]bool{}
	for range 2 {
		v, ok := l.Get()
		require.True(t, ok)
		got[v] = true
	}
	assert.Equal(t, map[*int]bool{a: true, b: true}, got)
	_, ok = l.Get()
	assert.False(t, ok)
}
