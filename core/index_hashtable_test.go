package core

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHashTableAgreesWithAMap drives the lookup table and a Go map with
// the same random puts and deletes over a small key space (long probe
// runs, wrap-around, key 0) and compares them throughout.
func TestHashTableAgreesWithAMap(t *testing.T) {
	for _, keySpace := range []uint64{16, 1000, 1 << 40} {
		rng := rand.New(rand.NewPCG(keySpace, 9))
		var m hashTable
		want := map[uint64]uint64{}
		for i := range 50000 {
			k := tableTestKey(rng, keySpace, i)
			switch rng.IntN(3) {
			case 0, 1:
				v := 1 + rng.Uint64()>>1
				m.put(k, v)
				want[k] = v
			default:
				_, ok := want[k]
				require.Equal(t, ok, m.del(k))
				delete(want, k)
			}
			if i%1000 == 0 {
				require.NoError(t, checkHashTable(&m))
			}
			v, ok := m.get(k)
			wv, wok := want[k]
			require.Equal(t, wok, ok)
			require.Equal(t, wv, v)
		}
		require.Equal(t, len(want), m.len())
		got := map[uint64]uint64{}
		m.each(func(k, v uint64) { got[k] = v })
		require.Equal(t, want, got)
		m.reset()
		require.Zero(t, m.len())
		_, ok := m.get(0)
		require.False(t, ok)
		require.False(t, m.del(0))
	}
}

// tableTestKey is the i-th key of a table test over keys below space:
// drawn at random, and in a large space every third a small, poorly mixed
// one.
func tableTestKey(rng *rand.Rand, space uint64, i int) uint64 {
	if space > 1000 && i%3 == 0 {
		return uint64(i % 64)
	}
	return rng.Uint64N(space)
}

// An engine's cache stores and evicts blocks forever at a steady size:
// the table must stay at a steady size too (tombstones are reused and
// cleared, never a reason to grow), and every key stays found.
func TestHashTableChurnKeepsItsSize(t *testing.T) {
	const live = 5000
	rng := rand.New(rand.NewPCG(3, 4))
	var m hashTable
	var keys []uint64
	for range live {
		k := rng.Uint64()
		keys = append(keys, k)
		m.put(k, k|1)
	}
	size, settled := len(m.groups), 0
	for round := range 200_000 {
		if round == 100_000 {
			settled = len(m.groups)
		}
		i := rng.IntN(live)
		require.True(t, m.del(keys[i]))
		keys[i] = rng.Uint64()
		m.put(keys[i], keys[i]|1)
		if round%20000 == 0 {
			require.NoError(t, checkHashTable(&m))
		}
	}
	require.NoError(t, checkHashTable(&m))
	require.Equal(t, live, m.len())
	// Rehashing in place when a full table is under half full, else at
	// twice the size, a steady load settles in one step at most.
	assert.LessOrEqual(t, settled, 2*size)
	assert.Equal(t, settled, len(m.groups), "the table grew under churn at a steady size")
	for _, k := range keys {
		v, ok := m.get(k)
		require.True(t, ok)
		require.Equal(t, k|1, v)
	}
}

// A large table rehashes without moving its entries at once: after a
// rehash the old groups stay beside the new ones, each mutation moves at
// most one drain step's entries, the old table is empty before the next
// rehash (none forced), and every key is found throughout.
func TestHashTableRehashIsIncremental(t *testing.T) {
	for _, tc := range []struct {
		name      string
		deleteOne int // one delete to this many inserts (0: none)
	}{
		{"only inserts", 0},
		{"one delete to three inserts", 3},
		{"churn at a steady size", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(13, uint64(tc.deleteOne)))
			var m hashTable
			want := map[uint64]uint64{}
			var keys []uint64
			rehashes, drained, maxMoved := 0, 0, 0
			for i := range 300_000 {
				if tc.deleteOne == 1 && len(keys) >= 20_000 && i%2 == 1 || tc.deleteOne > 1 && i%tc.deleteOne == 0 && len(keys) > 0 {
					j := rng.IntN(len(keys))
					require.True(t, m.del(keys[j]))
					delete(want, keys[j])
					keys[j] = keys[len(keys)-1]
					keys = keys[:len(keys)-1]
					continue
				}
				k, v := rng.Uint64(), 1+rng.Uint64()>>1
				groups, old := len(m.groups), m.old
				inOld := 0
				if old != nil {
					inOld = old.count
				}
				m.put(k, v)
				want[k] = v
				keys = append(keys, k)
				switch {
				case m.old != nil && m.old != old:
					rehashes++
					// More left in old than one step moves: this rehash
					// had to finish the previous one's drain at once.
					require.False(t, old != nil && inOld > hashDrainChunk*groupSlots, "a rehash had to finish the previous one's drain")
					require.Equal(t, groups, len(m.old.groups))
					require.LessOrEqual(t, m.count, 1, "the rehash moved entries at once")
					require.NoError(t, checkHashTable(&m))
				case old != nil:
					moved := inOld
					if m.old != nil {
						moved -= m.old.count
					} else {
						drained++
						require.NoError(t, checkHashTable(&m))
					}
					maxMoved = max(maxMoved, moved)
				}
				if m.old != nil && i%997 == 0 {
					require.NoError(t, checkHashTable(&m))
				}
			}
			require.Greater(t, rehashes, 2)
			require.Positive(t, drained, "no rehash was drained")
			require.LessOrEqual(t, maxMoved, hashDrainChunk*groupSlots, "entries moved by one insert")
			require.Positive(t, maxMoved)
			require.Equal(t, len(want), m.len())
			got := map[uint64]uint64{}
			m.each(func(k, v uint64) { got[k] = v })
			require.Equal(t, want, got)
		})
	}
}

// A large table close to doubling has its next groups made off the lock,
// and the rehash takes them.
func TestHashTableNextGroupsAreMadeAhead(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 1))
	var m hashTable
	var prepared *hashGroup
	for i := 0; ; i++ {
		require.Less(t, i, 1_000_000, "the table never grew past %d groups", 2*hashPrepareMin)
		groups := len(m.groups)
		m.put(rng.Uint64(), 1)
		if m.next != nil && prepared == nil {
			var gs []hashGroup
			select {
			case gs = <-m.next:
			case <-time.After(10 * time.Second):
				t.Fatal("the next groups were never made")
			}
			require.Len(t, gs, 2*len(m.groups))
			prepared = &gs[0]
			m.next <- gs
		}
		if len(m.groups) != groups && groups >= hashPrepareMin {
			require.NotNil(t, prepared, "the table grew from %d groups without its next groups asked for", groups)
			require.Same(t, prepared, &m.groups[0], "the rehash made its own groups")
			require.Nil(t, m.next)
			require.NoError(t, checkHashTable(&m))
			return
		}
	}
}
