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
	assert.NotEmpty(t, x.t.rootFilter.current(), "a root with thousands of children has a filter")
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

// A prompt every worker has evicted is told apart by the filter as surely
// as one never sent: its first block's counts went when it left the root,
// without waiting for a rebuild. (A filter of plain bits lets such a
// prompt by until it is rebuilt: a fifth of the root evicted is below any
// sensible rebuild threshold.)
func TestRootFilterForgetsEvictedPrompts(t *testing.T) {
	x := NewIndex(IndexOptions{Mode: ModeWarn})
	w := Worker{ID: 1}
	var prompts [][]StoredBlock
	for salt := range uint64(2000) {
		p := chain(2, salt<<8)
		require.NoError(t, x.ApplyStored(w, salt, nil, p))
		prompts = append(prompts, p)
	}
	built := x.t.rootFilter.current()
	require.NotEmpty(t, built)
	for _, p := range prompts[:400] {
		require.NoError(t, x.ApplyRemoved(w, 1, []uint64{p[1].BlockHash, p[0].BlockHash}))
	}
	require.NoError(t, checkInvariants(x))
	require.Equal(t, &built[0], &x.t.rootFilter.current()[0], "removals alone did not rebuild the filter")
	letBy := 0
	for _, p := range prompts[:400] {
		if x.t.rootFilter.mayHold(p[0].TokensHash) {
			letBy++
		}
	}
	assert.LessOrEqual(t, letBy, 8, "evicted prompts the filter still lets by, of 400")
	for _, p := range prompts[400:] {
		require.True(t, x.t.rootFilter.mayHold(p[0].TokensHash))
	}
}

// A counter that saturates stays saturated: counting past it could wrap
// it to zero and hide a key that is there. Eighty keys in one word of
// sixteen counters saturate about half of them; once every key is taken
// away again, each counter is back at zero or stuck at its maximum, and
// the removals that met a stuck one are reported.
func TestRootFilterCountersSaturate(t *testing.T) {
	ws := make(filterWords, 1)
	keys := make([]uint64, 80)
	for i := range keys {
		keys[i] = uint64(i+1) * 0x9e3779b97f4a7c15
		ws.count(keys[i], true)
	}
	f := &rootFilter{}
	f.words.Store(&ws)
	for _, k := range keys {
		require.True(t, f.mayHold(k))
	}
	saturated := 0
	for _, k := range keys {
		saturated += ws.count(k, false)
	}
	assert.Positive(t, saturated)
	for j := range 16 {
		assert.Contains(t, []uint64{0, counterMax}, ws[0]>>(4*j)&counterMax, "counter %d", j)
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
			assert.NotNil(t, x.t.rootFilter.current(), "the root kept a filter")
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

// A large root's filter is rebuilt a few children a change, not at once:
// the store that starts a rebuild counts at most rootFilterStep children
// into the new words, the filter in use keeps answering (and counting)
// until the new one counts every child, and the root's children are all
// matched throughout. (Counting them all at once held the index's lock
// for over a millisecond at 16k children.)
func TestRootFilterRebuildIsIncremental(t *testing.T) {
	x := NewIndex(IndexOptions{Mode: ModeWarn})
	w := Worker{ID: 1}
	f := &x.t.rootFilter
	var prompts [][]StoredBlock
	store := func() {
		p := chain(2, uint64(len(prompts)+1)<<8)
		require.NoError(t, x.ApplyStored(w, 1, nil, p))
		prompts = append(prompts, p)
	}
	for !f.rebuilding || len(prompts) <= rootFilterAtOnce {
		store()
	}
	n := len(prompts)
	require.NotNil(t, f.next)
	assert.LessOrEqual(t, f.nextKeys, rootFilterStep+1, "the store that started the rebuild counted only a step of children")
	inUse := f.current()
	require.NotNil(t, inUse, "the filter in use stays while the next is built")
	changes := 0
	for f.rebuilding {
		store()
		changes++
		require.NoError(t, checkInvariants(x))
		if f.rebuilding {
			require.Same(t, &inUse[0], &f.current()[0], "the filter in use is replaced only when the next counts every child")
		}
	}
	assert.InDelta(t, n/rootFilterStep, changes, float64(n/rootFilterStep)/4+2, "changes it took to count %d children", n)
	assert.NotSame(t, &inUse[0], &f.current()[0], "the rebuilt filter is published")
	assert.GreaterOrEqual(t, len(f.current()), 2*len(prompts)-2*changes)
	for _, p := range prompts {
		require.True(t, f.mayHold(p[0].TokensHash))
	}
}

// Children that leave the root while its filter is rebuilt, counted in
// it already or not (the rebuild's next child among them), and runs
// split at the root (one takes the other's place among its children)
// leave the rebuilt filter counting exactly the root's children.
func TestRootFilterRebuildSurvivesChanges(t *testing.T) {
	x := NewIndex(IndexOptions{Mode: ModeWarn})
	w := Worker{ID: 1}
	f := &x.t.rootFilter
	rng := rand.New(rand.NewPCG(3, 4))
	live := map[uint64][]StoredBlock{}
	salt := uint64(0)
	for steps := 0; steps < 6000; steps++ {
		switch k := rng.IntN(10); {
		case k < 6 || len(live) < 300:
			salt++
			p := chain(4, salt<<8)
			require.NoError(t, x.ApplyStored(w, 1, nil, p))
			live[salt] = p
		default:
			for s, p := range live {
				switch k {
				case 6: // the whole prompt, tail first
					require.NoError(t, x.ApplyRemoved(w, 2, []uint64{p[3].BlockHash, p[2].BlockHash, p[1].BlockHash, p[0].BlockHash}))
					delete(live, s)
				case 7: // its head: the rest is detached, off the root
					require.NoError(t, x.ApplyRemoved(w, 2, []uint64{p[0].BlockHash}))
					delete(live, s)
				default: // a second worker shares its first block: a split at the root
					require.NoError(t, x.ApplyStored(Worker{ID: 2}, 3, nil, p[:1]))
				}
				break
			}
		}
		if steps%97 == 0 {
			require.NoError(t, checkInvariants(x), "step %d (rebuilding: %v)", steps, f.rebuilding)
		}
	}
	require.NoError(t, checkInvariants(x))
	for _, p := range live {
		require.True(t, f.mayHold(p[0].TokensHash))
	}
}
