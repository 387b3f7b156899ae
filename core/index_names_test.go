package core

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nameSpace is a stand-in tree for name table tests: one segment whose
// blocks' external hashes are the names, and aliases for some.
type nameSpace struct {
	segs    chunked[blockSegment]
	aliases map[aliasKey]uint64
}

func newNameSpace() *nameSpace {
	s := &nameSpace{aliases: map[aliasKey]uint64{}}
	s.segs.push(blockSegment{})
	s.segs.push(blockSegment{})
	return s
}

func (s *nameSpace) keys() nameKeys { return nameKeys{segs: &s.segs, aliases: s.aliases, wi: 3} }

// block adds a block whose own name is ext and returns its slot value;
// named otherwise (alias != ext), it is marked so.
func (s *nameSpace) block(ext, alias uint64) uint64 {
	seg := s.segs.at(1)
	b := mkRef(1, uint32(len(seg.exts)))
	seg.exts = append(seg.exts, ext)
	seg.locals = append(seg.locals, 0)
	if alias == ext {
		return uint64(b)
	}
	s.aliases[aliasKey{b, 3}] = alias
	return uint64(b) | slotAliased
}

// TestNameTableAgreesWithAMap drives a name table and a Go map with the
// same random adds, puts (some by alias) and deletes (del and take) over
// small and large name spaces (long probes, overflow counts, wrap-around,
// name 0) and compares them throughout, the table's layout included.
func TestNameTableAgreesWithAMap(t *testing.T) {
	for _, space := range []uint64{16, 1000, 1 << 40} {
		rng := rand.New(rand.NewPCG(space, 11))
		ns := newNameSpace()
		var m nameTable
		want := map[uint64]uint64{}
		for i := range 40000 {
			k := tableTestKey(rng, space, i)
			ks := ns.keys()
			_, had := want[k]
			switch op := rng.IntN(4); op {
			case 0: // a new block, named by its own hash
				v := ns.block(k, k)
				ks = ns.keys()
				require.Equal(t, !had, m.add(k, v, &ks))
				if !had {
					want[k] = v
				}
			case 1: // a new block named by an alias, or renamed to one
				if had {
					require.True(t, m.del(k, &ks))
				}
				v := ns.block(rng.Uint64(), k)
				ks = ns.keys()
				m.put(k, v, &ks)
				want[k] = v
			case 2: // a removal's delete
				v, ok := m.take(k, &ks, noRef, 0)
				require.Equal(t, had, ok)
				require.Equal(t, want[k], v)
				delete(want, k)
			default:
				require.Equal(t, had, m.del(k, &ks))
				delete(want, k)
			}
			if i%2000 == 0 {
				require.NoError(t, checkNameTable(&m, &ks))
			}
			v, ok := m.get(k, &ks)
			wv, wok := want[k]
			require.Equal(t, wok, ok)
			require.Equal(t, wv, v)
		}
		ks := ns.keys()
		require.NoError(t, checkNameTable(&m, &ks))
		require.Equal(t, len(want), m.len())
		got := map[blockRef]bool{}
		m.each(func(b blockRef) { got[b] = true })
		for _, v := range want {
			require.True(t, got[blockRef(v&^slotAliased)])
		}
		require.Len(t, got, len(want))
		m.reset()
		require.Zero(t, m.len())
		_, ok := m.get(0, &ks)
		require.False(t, ok)
		require.False(t, m.del(0, &ks))
	}
}

// An engine's cache stores and evicts blocks forever at a steady size.
// Once its names have turned over, a table is kept at most half full
// (turnedOver): one already under half stays at its size, one above it
// doubles once, and neither grows again, however long the churn goes on
// (a delete frees its slot at once, and the overflow counts go back
// down). Every name stays found throughout.
func TestNameTableChurnKeepsItsSize(t *testing.T) {
	for _, tc := range []struct {
		live   int
		growth int // the table's size after the churn, to before it
	}{
		{live: 5000, growth: 1}, // 2048 halves, under half full
		{live: 9000, growth: 2}, // 2048 halves, above half full
		{live: 60, growth: 1},   // a small table is left at its load
	} {
		rng := rand.New(rand.NewPCG(3, uint64(tc.live)))
		ns := newNameSpace()
		var m nameTable
		var names []uint64
		for range tc.live {
			k := rng.Uint64()
			names = append(names, k)
			v := ns.block(k, k)
			ks := ns.keys()
			require.True(t, m.add(k, v, &ks))
		}
		size := len(m.halves)
		require.False(t, m.churned)
		for round := range 100_000 {
			i := rng.IntN(tc.live)
			ks := ns.keys()
			require.True(t, m.del(names[i], &ks))
			names[i] = rng.Uint64()
			v := ns.block(names[i], names[i])
			ks = ns.keys()
			require.True(t, m.add(names[i], v, &ks))
			if round == 2*tc.live {
				require.Equal(t, tc.growth*size, len(m.halves), "live %d: the table's size after two turnovers", tc.live)
			}
			if round%20000 == 0 {
				require.NoError(t, checkNameTable(&m, &ks))
			}
		}
		ks := ns.keys()
		require.NoError(t, checkNameTable(&m, &ks))
		require.Equal(t, tc.live, m.len())
		assert.Equal(t, size >= nameChurnMin, m.churned, "live %d", tc.live)
		assert.Equal(t, tc.growth*size, len(m.halves), "live %d: the table's size after the churn", tc.live)
		for _, k := range names {
			_, ok := m.get(k, &ks)
			require.True(t, ok)
		}
	}
}

// A table that only grows (a worker filling its cache, or one that never
// evicts) is never taken for a churned one: it keeps the full load.
func TestNameTableGrowingIsNotChurn(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	ns := newNameSpace()
	var m nameTable
	var names []uint64
	for i := range 200_000 {
		k := rng.Uint64()
		names = append(names, k)
		v := ns.block(k, k)
		ks := ns.keys()
		require.True(t, m.add(k, v, &ks))
		if i%3 == 0 { // one delete to three inserts
			j := rng.IntN(len(names))
			require.True(t, m.del(names[j], &ks))
			names[j] = names[len(names)-1]
			names = names[:len(names)-1]
		}
	}
	assert.False(t, m.churned)
	ks := ns.keys()
	require.NoError(t, checkNameTable(&m, &ks))
}

// A store reserves room for its names up front, so the table grows once
// per store, not once per insert, and an insert never grows it after.
func TestNameTableReserve(t *testing.T) {
	ns := newNameSpace()
	var m nameTable
	ks := ns.keys()
	m.reserve(1000, &ks)
	require.GreaterOrEqual(t, m.growthLeft, 1000)
	halves := len(m.halves)
	for k := range uint64(1000) {
		v := ns.block(k, k)
		ks = ns.keys()
		require.True(t, m.add(k, v, &ks))
	}
	require.Equal(t, halves, len(m.halves))
	require.NoError(t, checkNameTable(&m, &ks))
}

// Growth moves the entries in their home halves by the hash bits their
// slots keep, for the table sizes those bits serve, and reads the names
// back outside them: a table grown from empty to past that range keeps
// every name, and each slot's bits stay right (checkNameTable).
func TestNameTableGrowsPastTheSlotHashBits(t *testing.T) {
	const names = 160_000
	rng := rand.New(rand.NewPCG(5, 6))
	ns := newNameSpace()
	var m nameTable
	keys := make([]uint64, names)
	for i := range keys {
		k := rng.Uint64()
		keys[i] = k
		alias := k
		if i%97 == 0 {
			k = rng.Uint64() // the block's own hash differs: named by alias
		}
		v := ns.block(k, alias)
		ks := ns.keys()
		require.True(t, m.add(alias, v, &ks))
		if len(m.halves) == 1<<(64-slotHashLo-slotHashBits) && i%1000 == 0 {
			require.NoError(t, checkNameTable(&m, &ks))
		}
	}
	require.Greater(t, len(m.halves), 1<<(64-slotHashLo), "the table outgrew the sizes its slots' hash bits serve")
	ks := ns.keys()
	require.NoError(t, checkNameTable(&m, &ks))
	for _, k := range keys {
		_, ok := m.get(k, &ks)
		require.True(t, ok)
	}
}

// A block ref of any live segment leaves a slot's marks alone.
func TestBlockRefsLeaveTheSlotMarksFree(t *testing.T) {
	require.Zero(t, uint64(mkRef(maxSegments-1, maxPositions-1))&(slotAliased|slotMeta))
	for i := range uint(slotHashBits) {
		h := uint64(1) << (slotHashLo + i)
		require.Equal(t, uint(1)<<i, slotHashBitsOf(slotHashOf(h)), "hash bit %d", slotHashLo+i)
		require.Equal(t, slotHashOf(h), slotHashOf(h)&slotHashMask)
	}
}
