package core

import (
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clearFixture is two ranks sharing 64 system prompts: a holds n blocks
// in prompts of 40-167 blocks (under a system prompt or at the root), b
// holds half of the system prompts and prompts of its own.
type clearFixture struct {
	x       *Index
	a, b    Worker
	prompts [][]uint64 // every prompt's local hashes, system prompt first
}

func newClearFixture(t *testing.T, n int, section int) *clearFixture {
	t.Helper()
	f := &clearFixture{x: NewIndex(IndexOptions{Mode: ModeWarn}), a: Worker{ID: 1}, b: Worker{ID: 2, DPRank: 1}}
	f.x.writeSection = section
	sys := make([][]StoredBlock, 64)
	for i := range sys {
		sys[i] = chain(8, uint64(i+1)<<48)
		require.NoError(t, f.x.ApplyStored(f.a, 1, nil, sys[i]))
		if i%2 == 0 {
			require.NoError(t, f.x.ApplyStored(f.b, 1, nil, sys[i]))
		}
	}
	held := 64 * 8
	for i := 0; held < n; i++ {
		s := sys[i%64]
		blocks := chainFrom(s[7].BlockHash, 40+i%128, uint64(i+1)<<24)
		parent := &s[7].BlockHash
		if i%5 == 0 {
			parent = nil // a root prompt
			blocks = chain(40+i%128, uint64(i+1)<<24)
		}
		require.NoError(t, f.x.ApplyStored(f.a, 2, parent, blocks))
		held += len(blocks)
		q := localsOf(blocks)
		if parent != nil {
			q = append(localsOf(s), q...)
		}
		f.prompts = append(f.prompts, q)
		if i%3 == 0 && i%64%2 == 0 { // b holds the even system prompts
			other := chainFrom(s[7].BlockHash, 16, uint64(i+1)<<32)
			require.NoError(t, f.x.ApplyStored(f.b, 2, &s[7].BlockHash, other))
			f.prompts = append(f.prompts, append(localsOf(s), localsOf(other)...))
		}
	}
	return f
}

// A large clear releases the rank's blocks a section per hold of the
// write lock, and ends where the clear under one hold did: the rank holds
// nothing, the other rank's matches are unchanged, no violation counted.
func TestLargeClearIsSectioned(t *testing.T) {
	const section = 128
	for _, tc := range []struct {
		name  string
		clear func(x *Index, w Worker)
	}{
		{"ClearWorker", func(x *Index, w Worker) { x.ClearWorker(w) }},
		{"ClearAllBlocks", func(x *Index, w Worker) { x.ClearAllBlocks(w.ID) }},
		{"RemoveWorker", func(x *Index, w Worker) { x.RemoveWorker(w.ID) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newClearFixture(t, 20_000, section)
			// The same events, cleared under one hold (a section larger
			// than the rank), are the reference.
			ref := newClearFixture(t, 20_000, 1<<30)
			tc.clear(ref.x, ref.a)

			wi := f.x.t.index[f.a]
			before := f.x.t.workers[wi].lookup.len()
			require.Greater(t, before, clearAtOnce*section)
			var holds, most int
			var names int
			f.x.holdProbe = func(held bool) {
				n := f.x.t.workers[wi].lookup.len()
				if held {
					names = n
					return
				}
				holds++
				most = max(most, names-n)
			}
			tc.clear(f.x, f.a)
			f.x.holdProbe = nil

			assert.LessOrEqual(t, most, section, "no hold released more than a section of names")
			assert.Greater(t, holds, before/section, "a hold per section at least")
			require.NoError(t, checkInvariants(f.x))
			assert.Zero(t, f.x.WorkerBlocks(f.a))
			assert.Equal(t, [NumViolations]uint64{}, f.x.Stats().Violations, "no violation counted")
			assert.Equal(t, ref.x.Stats(), f.x.Stats())
			for i, q := range f.prompts {
				require.Equal(t, scoresOf(ref.x, q, false), scoresOf(f.x, q, false), "prompt %d", i)
			}
		})
	}
}

// A match during a large clear sees the rank with at most the blocks it
// held before, and once the clear returns, with none.
func TestMatchesDuringALargeClearSeeNoMoreThanBefore(t *testing.T) {
	f := newClearFixture(t, 20_000, 64)
	before := make([]map[Worker]uint32, len(f.prompts))
	for i, q := range f.prompts {
		before[i] = scoresOf(f.x, q, false)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.x.ClearWorker(f.a)
	}()
	for i := 0; ; i++ {
		select {
		case <-done:
			for j, q := range f.prompts {
				s := scoresOf(f.x, q, false)
				assert.Zero(t, s[f.a], "prompt %d after the clear", j)
				assert.Equal(t, before[j][f.b], s[f.b], "prompt %d: the other rank", j)
			}
			require.NoError(t, checkInvariants(f.x))
			return
		default:
		}
		k := i % len(f.prompts)
		s := scoresOf(f.x, f.prompts[k], false)
		require.LessOrEqual(t, s[f.a], before[k][f.a], "prompt %d during the clear", k)
		require.Equal(t, before[k][f.b], s[f.b], "prompt %d: the other rank", k)
		// Where goroutines are not preempted (a wasm build runs them on
		// one thread), the clear gets its turn here.
		runtime.Gosched()
	}
}

// The rank's own mutations that come during its clear apply after it:
// a store then stays whole (the clear does not take part of it), a
// removal of a block the clear already released counts as not found.
// Another rank's store goes on meanwhile.
func TestARanksMutationsDuringItsClearApplyAfterIt(t *testing.T) {
	f := newClearFixture(t, 20_000, 64)
	fresh := chain(300, 7<<56)
	other := chain(20, 9<<56)
	var started sync.Once
	var wg sync.WaitGroup
	holds := 0
	f.x.holdProbe = func(held bool) {
		if held {
			return
		}
		if holds++; holds == 3 { // the clear is reading the rank's names
			started.Do(func() {
				wg.Add(2)
				go func() { defer wg.Done(); assert.NoError(t, f.x.ApplyStored(f.a, 9, nil, fresh)) }()
				go func() { defer wg.Done(); assert.NoError(t, f.x.ApplyStored(f.b, 9, nil, other)) }()
			})
		}
	}
	f.x.ClearWorker(f.a)
	wg.Wait()
	f.x.holdProbe = nil

	require.NoError(t, checkInvariants(f.x))
	assert.Equal(t, uint64(len(fresh)), f.x.WorkerBlocks(f.a), "the store, whole, after the clear")
	assert.Equal(t, map[Worker]uint32{f.a: uint32(len(fresh))}, scoresOf(f.x, localsOf(fresh), false))
	assert.Equal(t, map[Worker]uint32{f.b: uint32(len(other))}, scoresOf(f.x, localsOf(other), false))
	assert.Equal(t, [NumViolations]uint64{}, f.x.Stats().Violations)
}

// Two clears of one rank, and a removal of its worker, at once: each
// waits for the other's sections, and the rank ends with nothing.
func TestConcurrentClearsOfOneRank(t *testing.T) {
	for round := range 3 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			f := newClearFixture(t, 10_000, 32)
			var wg sync.WaitGroup
			wg.Go(func() { f.x.ClearWorker(f.a) })
			wg.Go(func() { f.x.ClearAllBlocks(f.a.ID) })
			wg.Go(func() { f.x.ClearWorker(f.a) })
			if round == 2 {
				wg.Go(func() { f.x.RemoveWorker(f.a.ID) })
			}
			wg.Wait()
			require.NoError(t, checkInvariants(f.x))
			assert.Zero(t, f.x.WorkerBlocks(f.a))
			assert.Equal(t, [NumViolations]uint64{}, f.x.Stats().Violations)
		})
	}
}
