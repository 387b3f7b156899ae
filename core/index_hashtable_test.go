package core

import (
	"math/rand/v2"
	"testing"

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
