package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// chain is n block hashes of a sequence named seed: two sequences share a
// block when they share its whole prefix, so sharing is spelled by
// building one chain on another (see fork).
func chain(seed uint64, n int) []uint64 {
	hs := make([]uint64, n)
	for k := range hs {
		hs[k] = seed<<20 | uint64(k+1)
	}
	return hs
}

// fork is base's first keep hashes followed by n-keep hashes of its own.
func fork(base []uint64, keep int, seed uint64, n int) []uint64 {
	hs := slices.Clone(base[:keep])
	for k := keep; k < n; k++ {
		hs = append(hs, seed<<20|uint64(k+1))
	}
	return hs
}

// smallConfig is an engine with few small blocks, where every effect is
// easy to provoke.
func smallConfig(blocks, blockSize int) Config {
	cfg := DefaultConfig()
	cfg.NumBlocks, cfg.BlockSize = blocks, blockSize
	return cfg
}

func newEngine(t testing.TB, cfg Config) *Engine {
	t.Helper()
	e, err := New(cfg)
	require.NoError(t, err)
	return e
}

// stepCopy is a StepResult copied out of the engine's reused buffers.
func stepCopy(r StepResult) StepResult {
	c := r
	c.Admitted = slices.Clone(r.Admitted)
	c.FirstTokens = slices.Clone(r.FirstTokens)
	c.Generated = slices.Clone(r.Generated)
	c.Finished = slices.Clone(r.Finished)
	c.Preempted = slices.Clone(r.Preempted)
	c.Removed = slices.Clone(r.Removed)
	c.Stored = make([]BlockStored, len(r.Stored))
	for i, s := range r.Stored {
		s.Hashes = slices.Clone(s.Hashes)
		c.Stored[i] = s
	}
	return c
}

// run steps e until it is idle (or maxSteps), checking its invariants and
// replaying its KV events into a set that must match the cache, and
// returns every step.
func run(t testing.TB, e *Engine, maxSteps int) []StepResult {
	t.Helper()
	var steps []StepResult
	for !e.Idle() {
		require.Less(t, len(steps), maxSteps, "engine did not drain")
		steps = append(steps, step(t, e))
	}
	requireCacheMatches(t, e, views[e])
	return steps
}

// views is, per engine under test, the cache as a router sees it from the
// engine's events.
var views = map[*Engine]map[uint64]bool{}

// step runs one step, replays its events into the engine's view, checks
// the invariants and returns a copy of the result.
func step(t testing.TB, e *Engine) StepResult {
	t.Helper()
	if views[e] == nil {
		views[e] = map[uint64]bool{}
	}
	r := stepCopy(e.Step())
	replay(t, views[e], r)
	checkInvariants(t, e)
	return r
}

// replay applies a step's events to a router's view of the cache: every
// evicted hash was stored before, every stored hash is new, and every
// store's parent is in the view (a router drops a store whose parent it
// does not hold, and counts a violation).
func replay(t testing.TB, cached map[uint64]bool, r StepResult) {
	t.Helper()
	// Evictions happen at allocation, stores after: in a step, a hash may
	// be evicted and stored again (recomputed), so removals go first.
	for _, h := range r.Removed {
		require.True(t, cached[h], "removed %#x was never stored", h)
		delete(cached, h)
	}
	for _, ev := range r.Stored {
		if ev.HasParent {
			require.True(t, cached[ev.Parent], "request %s stored blocks from %d under parent %#x, which the view does not hold", ev.RequestID, ev.FirstBlock, ev.Parent)
		}
		for _, h := range ev.Hashes {
			require.False(t, cached[h], "stored %#x twice", h)
			cached[h] = true
		}
	}
}

func requireCacheMatches(t testing.TB, e *Engine, cached map[uint64]bool) {
	t.Helper()
	want := make([]uint64, 0, len(cached))
	for h := range cached {
		want = append(want, h)
	}
	got := e.CachedHashes(nil)
	slices.Sort(want)
	slices.Sort(got)
	if len(want) == 0 && len(got) == 0 {
		return
	}
	require.Equal(t, want, got, "the events replayed differ from the cache")
}

// checkInvariants walks the engine's state.
func checkInvariants(t testing.TB, e *Engine) {
	t.Helper()
	p := e.pool
	refs := make([]int32, len(p.blocks))
	for _, s := range e.running {
		require.True(t, s.running)
		bs := e.cfg.BlockSize
		require.Equal(t, (s.computed+bs-1)/bs, len(s.blocks), "request %s: blocks for %d computed tokens", s.id, s.computed)
		for _, i := range s.blocks {
			refs[i]++
		}
	}
	require.LessOrEqual(t, len(e.running), e.cfg.MaxNumSeqs)
	free := 0
	for i := p.head; i != noBlock; i = p.blocks[i].next {
		require.True(t, p.blocks[i].free)
		require.Zero(t, refs[i], "block %d is free and in use", i)
		free++
	}
	require.Equal(t, p.nFree, free)
	for i := range p.blocks {
		b := &p.blocks[i]
		require.Equal(t, refs[i], b.refs, "block %d refs", i)
		require.Equal(t, b.refs == 0, b.free, "block %d free flag", i)
		if b.cached {
			require.Equal(t, int32(i), p.byHash[b.hash])
		}
	}
	require.Equal(t, len(p.blocks), p.used()+p.nFree)
	for h, i := range p.byHash {
		require.True(t, p.blocks[i].cached && p.blocks[i].hash == h)
	}
	require.Equal(t, len(e.running)+e.waiting.len(), len(e.byID))
}

// ttft is the time from the engine's start to id's first token.
func ttft(steps []StepResult, id string) time.Duration {
	var now time.Duration
	for _, s := range steps {
		now += s.Duration
		if slices.Contains(s.FirstTokens, id) {
			return now
		}
	}
	return -1
}

// randomLoad adds n requests drawn from rng: prompts that share prefixes
// with earlier ones, varied lengths.
func randomLoad(t testing.TB, e *Engine, rng *rand.Rand, n int) {
	t.Helper()
	bs := e.cfg.BlockSize
	var bases [][]uint64
	for i := range n {
		prompt := 1 + rng.IntN(12*bs)
		output := 1 + rng.IntN(4*bs)
		full := prompt / bs
		var hs []uint64
		if len(bases) > 0 && rng.IntN(2) == 0 {
			base := bases[rng.IntN(len(bases))]
			hs = fork(base, min(len(base), full, rng.IntN(full+1)), uint64(i+1), full)
		} else {
			hs = chain(uint64(i+1), full)
		}
		bases = append(bases, hs)
		require.NoError(t, e.Add(Request{ID: fmt.Sprintf("r%d", i), BlockHashes: hs, PromptTokens: prompt, OutputTokens: output}))
	}
}
