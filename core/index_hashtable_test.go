package core

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNameTableAgreesWithAMap drives the lookup table and a Go map with
// the same random puts and deletes over a small key space (long probe
// runs, wrap-around, key 0) and compares them throughout.
func TestNameTableAgreesWithAMap(t *testing.T) {
	for _, keySpace := range []uint64{16, 1000, 1 << 40} {
		rng := rand.New(rand.NewPCG(keySpace, 9))
		var m nameTable
		want := map[uint64]uint32{}
		for i := range 50000 {
			k := rng.Uint64N(keySpace)
			if keySpace > 1000 && i%3 == 0 {
				k = uint64(i % 64) // small, poorly mixed keys too
			}
			switch rng.IntN(3) {
			case 0, 1:
				v := rng.Uint32N(1 << 31)
				m.put(k, v)
				want[k] = v
			default:
				_, ok := want[k]
				require.Equal(t, ok, m.del(k))
				delete(want, k)
			}
			if i%1000 == 0 {
				require.NoError(t, checkNameTable(&m))
			}
			v, ok := m.get(k)
			wv, wok := want[k]
			require.Equal(t, wok, ok)
			require.Equal(t, wv, v)
		}
		require.Equal(t, len(want), m.len())
		got := map[uint64]uint32{}
		m.each(func(k uint64, v uint32) { got[k] = v })
		require.Equal(t, want, got)
		m.reset()
		require.Zero(t, m.len())
		_, ok := m.get(0)
		require.False(t, ok)
		require.False(t, m.del(0))
	}
}
