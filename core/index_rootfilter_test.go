package core

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRootFilterNeverHidesAChild grows the root to thousands of children
// (the filter is built and rebuilt as it fills), evicts most of them from
// head and tail (rebuilt as removals pile up), adds more, and checks
// throughout that every prompt held is still matched, the filter counts
// the root's children (checkInvariants), and prompts never stored match
// nothing.
func TestRootFilterNeverHidesAChild(t *testing.T) {
	x := NewIndex(IndexOptions{Mode: ModeWarn})
	rng := rand.New(rand.NewPCG(5, 6))
	prompts := map[uint64][]StoredBlock{}
	w := func(salt uint64) Worker { return Worker{ID: salt % 3} }
	store := func(salt uint64) {
		p := chain(1+int(salt%5), salt<<8)
		require.NoError(t, x.ApplyStored(w(salt), salt, nil, p))
		prompts[salt] = p
	}
	for salt := range uint64(3000) {
		store(salt)
	}
	require.NoError(t, checkInvariants(x))
	assert.NotEmpty(t, x.t.rootFilter.words(), "a root with thousands of children has a filter")
	for round := range 6 {
		for salt, p := range prompts {
			if rng.IntN(4) == 0 {
				continue
			}
			hashes := []uint64{}
			for _, b := range p {
				hashes = append(hashes, b.BlockHash)
			}
			if round%2 == 1 {
				// Head first: the rest of the prompt is detached, and
				// leaves the root as a child.
				slices.Reverse(hashes)
			}
			require.NoError(t, x.ApplyRemoved(w(salt), salt, hashes))
			delete(prompts, salt)
		}
		require.NoError(t, checkInvariants(x))
		for salt := range uint64(500) {
			store(uint64(10000*(round+1)) + salt)
		}
		require.NoError(t, checkInvariants(x))
		for salt, p := range prompts {
			ms := x.AppendMatches(nil, localsOf(p), false)
			require.Len(t, ms, 1, "prompt %d", salt)
			assert.Equal(t, w(salt), ms[0].Worker)
			assert.Equal(t, uint32(len(p)), ms[0].Score)
		}
		for salt := range uint64(200) {
			assert.Empty(t, x.AppendMatches(nil, localsOf(chain(3, (1<<40+salt)<<8)), false))
		}
	}
}

// Matches read the root's filter without the index's lock. A writer
// storing and evicting prompts at the root (the filter built, filled,
// rebuilt as removals pile up) must never make a concurrent match miss a
// prompt held all along, nor match one never stored; run under -race, it
// also proves the filter's words are only read and written atomically.
func TestRootFilterReadWhileRebuilt(t *testing.T) {
	x := NewIndex(IndexOptions{Mode: ModeWarn})
	held := Worker{ID: 7}
	pinned := make([][]StoredBlock, 64)
	for i := range pinned {
		pinned[i] = chain(3, uint64(1+i)<<40)
		require.NoError(t, x.ApplyStored(held, 1, nil, pinned[i]))
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		w := Worker{ID: 8}
		for round := range 40 {
			var hashes []uint64
			for salt := range uint64(200) {
				p := chain(2, uint64(round)<<20|salt<<4)
				if err := x.ApplyStored(w, 2, nil, p); err != nil {
					t.Error(err)
					return
				}
				hashes = append(hashes, p[1].BlockHash, p[0].BlockHash)
			}
			if err := x.ApplyRemoved(w, 3, hashes); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	never := chain(3, 1<<60)
	buf := make([]Match, 0, 4)
	for i := 0; ; i++ {
		select {
		case <-done:
			require.NoError(t, checkInvariants(x))
			assert.NotNil(t, x.t.rootFilter.words(), "the root kept a filter")
			return
		default:
		}
		p := pinned[i%len(pinned)]
		buf = x.AppendMatches(buf[:0], localsOf(p), false)
		if len(buf) != 1 || buf[0].Worker != held || buf[0].Score != 3 {
			t.Fatalf("a prompt held all along matched %+v", buf)
		}
		if len(x.AppendMatches(buf[:0], localsOf(never), false)) != 0 {
			t.Fatal("a prompt never stored matched")
		}
		runtime.Gosched() // the writer's turn, where goroutines take turns (WebAssembly)
	}
}
