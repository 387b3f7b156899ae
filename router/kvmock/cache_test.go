package kvmock

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func digests(names ...byte) []Digest {
	out := make([]Digest, len(names))
	for i, n := range names {
		out[i] = mkDigest(n, 0)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// fill stores a sequence named ids (blockSize 1: token i is ids[i]'s last byte)
// in a fresh allocation and releases it.
func fill(t *testing.T, c *Cache, ids []Digest) {
	t.Helper()
	a, err := c.Allocate(ids, len(ids), len(ids))
	require.NoError(t, err)
	c.Store(a, a.Hits, ids[a.Hits:], parentOf(ids, a.Hits), tokensOf(ids[a.Hits:]), SeqTag{})
	c.Release(a)
}

func parentOf(ids []Digest, i int) *Digest {
	if i == 0 {
		return nil
	}
	return &ids[i-1]
}

func tokensOf(ids []Digest) []uint32 {
	out := make([]uint32, len(ids))
	for i, d := range ids {
		out[i] = uint32(d.Bytes()[31])
	}
	return out
}

func TestCacheStoreThenReuse(t *testing.T) {
	sink := &recordSink{}
	c := NewCache(64, 1, sink)
	ids := digests(1, 2, 3)

	a, err := c.Allocate(ids, 3, 4)
	require.NoError(t, err)
	assert.Equal(t, 0, a.Hits, "nothing cached yet")
	c.Store(a, 0, ids, nil, []uint32{1, 2, 3}, SeqTag{})
	assert.Equal(t, []Event{{Kind: EventBlockStored, Digests: ids, Tokens: []uint32{1, 2, 3}}}, sink.take())
	c.Release(a)

	tests := []struct {
		name     string
		prefix   []Digest
		maxHits  int
		wantHits int
	}{
		{"whole prefix", ids, 3, 3},
		{"capped by maxHits (the last prompt token is always computed)", ids, 2, 2},
		{"diverging after two blocks", append(digests(1, 2), digests(9)...), 3, 2},
		{"diverging at the root", digests(9, 2, 3), 3, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := c.Allocate(tc.prefix, tc.maxHits, 4)
			require.NoError(t, err)
			assert.Equal(t, tc.wantHits, b.Hits)
			c.Release(b)
			assert.Empty(t, sink.take(), "reuse and release publish nothing while nothing is evicted")
		})
	}
}

func TestCacheEvictsLeastRecentlyFreedDeepestFirst(t *testing.T) {
	sink := &recordSink{}
	c := NewCache(4, 1, sink)
	ab, cd := digests(0xA, 0xB), digests(0xC, 0xD)
	fill(t, c, ab) // freed: B then A
	fill(t, c, cd) // freed: D then C, after A
	sink.take()

	wantOrder := []Digest{ab[1], ab[0], cd[1], cd[0]}
	for i, want := range wantOrder {
		a, err := c.Allocate(digests(0xE0+byte(i)), 0, 1)
		require.NoError(t, err)
		assert.Equal(t, []Event{{Kind: EventBlockRemoved, Digests: []Digest{want}}}, sink.take(), "eviction %d", i)
		defer c.Release(a)
	}
	assert.Equal(t, 0, c.CachedPrefix(ab))
}

func TestCacheReuseRefreshesLRU(t *testing.T) {
	sink := &recordSink{}
	c := NewCache(4, 1, sink)
	ab, cd := digests(0xA, 0xB), digests(0xC, 0xD)
	fill(t, c, ab)
	fill(t, c, cd)
	// Reusing A moves it (and B) behind C and D in the free list.
	a, err := c.Allocate(ab, 2, 2)
	require.NoError(t, err)
	require.Equal(t, 2, a.Hits)
	c.Release(a)
	sink.take()

	b, err := c.Allocate(digests(0xEE, 0xEF), 0, 2)
	require.NoError(t, err)
	defer c.Release(b)
	assert.Equal(t, []Event{
		{Kind: EventBlockRemoved, Digests: []Digest{cd[1]}},
		{Kind: EventBlockRemoved, Digests: []Digest{cd[0]}},
	}, sink.take())
	assert.Equal(t, 2, c.CachedPrefix(ab))
}

func TestCacheFullChangesNothing(t *testing.T) {
	sink := &recordSink{}
	c := NewCache(3, 1, sink)
	fill(t, c, digests(1))
	held, err := c.Allocate(digests(7, 8), 0, 2)
	require.NoError(t, err)
	sink.take()
	before := c.Stats()

	_, err = c.Allocate(digests(5, 6), 0, 2)
	require.ErrorIs(t, err, ErrCacheFull)
	assert.Equal(t, before, c.Stats())
	assert.Empty(t, sink.take(), "a refused allocation evicts nothing")

	// A cached hit that sits in the free list is not also a fresh block:
	// reusing block 1 leaves no room for another.
	_, err = c.Allocate(digests(1), 1, 2)
	require.ErrorIs(t, err, ErrCacheFull)

	c.Release(held)
	a, err := c.Allocate(digests(1), 1, 3)
	require.NoError(t, err)
	assert.Equal(t, 1, a.Hits)
	_, err = c.Allocate(nil, 0, 4)
	require.Error(t, err, "more blocks than the cache has in all")
	assert.NotErrorIs(t, err, ErrCacheFull)
}

func TestCacheDoesNotCacheADigestTwice(t *testing.T) {
	sink := &recordSink{}
	c := NewCache(8, 1, sink)
	ids := digests(1, 2, 3)
	a, err := c.Allocate(ids, 3, 3)
	require.NoError(t, err)
	b, err := c.Allocate(ids, 3, 3)
	require.NoError(t, err)
	c.Store(a, 1, ids[1:2], &ids[0], []uint32{2}, SeqTag{}) // a computed block 2 first
	sink.take()
	c.Store(b, 0, ids, nil, []uint32{1, 2, 3}, SeqTag{})
	assert.Equal(t, []Event{
		{Kind: EventBlockStored, Digests: ids[0:1], Tokens: []uint32{1}},
		{Kind: EventBlockStored, Digests: ids[2:3], Parent: ptr(ids[1]), Tokens: []uint32{3}},
	}, sink.take(), "the run breaks at the block held elsewhere")
	c.Release(a)
	c.Release(b)
	assert.Equal(t, CacheStats{NumBlocks: 8, FreeBlocks: 8, CachedBlocks: 3}, c.Stats())

	// Evicting everything removes each digest exactly once.
	_, err = c.Allocate(nil, 0, 8)
	require.NoError(t, err)
	removed := map[Digest]int{}
	for _, ev := range sink.take() {
		require.Equal(t, EventBlockRemoved, ev.Kind)
		for _, d := range ev.Digests {
			removed[d]++
		}
	}
	assert.Equal(t, map[Digest]int{ids[0]: 1, ids[1]: 1, ids[2]: 1}, removed)
}

func TestCacheReset(t *testing.T) {
	sink := &recordSink{}
	c := NewCache(4, 1, sink)
	fill(t, c, digests(1, 2))
	a, err := c.Allocate(digests(3), 0, 1)
	require.NoError(t, err)
	sink.take()
	require.ErrorIs(t, c.Reset(), ErrBlocksInUse)
	assert.Empty(t, sink.take())
	c.Release(a)
	require.NoError(t, c.Reset())
	assert.Equal(t, []Event{{Kind: EventAllBlocksCleared}}, sink.take())
	assert.Equal(t, 0, c.CachedPrefix(digests(1)))
	assert.Equal(t, 0, c.Stats().CachedBlocks)

	// Cleared blocks are evicted silently: the router already dropped them.
	_, err = c.Allocate(nil, 0, 4)
	require.NoError(t, err)
	assert.Empty(t, sink.take())
}
