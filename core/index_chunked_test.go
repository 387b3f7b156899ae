package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A chunked array keeps every element where it was as it grows past its
// first chunks (no copy under the index's lock, and a pointer into a full
// chunk stays valid), takes each next chunk from the goroutine that made
// it ahead, and reads back what was pushed.
func TestChunkedGrowsWithoutMovingElements(t *testing.T) {
	var c chunked[run]
	const n = 5*chunkLen + 17
	var pinned []*run
	for i := range n {
		if i%chunkLen == 0 && i > 0 {
			// The chunk the previous one asked for is ready before the
			// push that needs it (the index's writers give it time).
			require.NotNil(t, c.next, "chunk %d was not asked for ahead", i/chunkLen)
			select {
			case a := <-c.next:
				c.next <- a
			case <-time.After(10 * time.Second):
				t.Fatal("the next chunk was never made")
			}
		}
		id := c.push(run{key: uint64(i)})
		require.Equal(t, uint32(i), id)
		if i >= chunkLen && i%97 == 0 {
			pinned = append(pinned, c.at(id))
		}
		if i == chunkLen {
			require.Nil(t, c.next, "the chunk made ahead was taken")
		}
	}
	require.Equal(t, n, c.len())
	for i := range n {
		require.Equal(t, uint64(i), c.at(uint32(i)).key)
	}
	for _, p := range pinned {
		assert.Same(t, p, c.at(uint32(p.key)), "element %d moved", p.key)
	}
	assert.Len(t, c.chunks, 6)
	assert.Len(t, c.chunks[0], chunkLen)
}

// An empty index stays small: the first chunk starts with one element
// and doubles, as a slice does.
func TestChunkedStartsSmall(t *testing.T) {
	var c chunked[blockSegment]
	c.push(blockSegment{})
	assert.Less(t, cap(c.chunks[0]), 8)
	assert.Nil(t, c.next)
}
