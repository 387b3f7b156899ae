package route

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/indexer"
)

// A report that finds the router's lock taken does not wait for it; the
// holder applies it before letting go, so the next reader sees it.
func TestNoWaitReportsAreAppliedBeforeTheNextReader(t *testing.T) {
	f := newFixture(t, 2, Options{})
	a, err := f.r.Route(Request{Model: "m", TokenIDs: tokens(1, 16), Held: true})
	require.NoError(t, err)
	b, err := f.r.Route(Request{Model: "m", TokenIDs: tokens(100, 16), Held: true})
	require.NoError(t, err)

	f.r.lock() // a decision in progress
	done := make(chan struct{})
	go func() {
		f.r.PrefillDoneNoWait(a.RequestID)
		f.r.FreeNoWait(b.RequestID)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a report waited for the router's lock")
	}
	assert.Equal(t, 2, f.r.load.active(), "queued, not applied, while the lock is held")
	f.r.unlock()

	st := f.r.Stats()
	assert.Equal(t, 1, st.ActiveRequests, "b's end was applied")
	require.Len(t, st.Workers, 1)
	assert.Zero(t, st.Workers[0].PrefillTokens, "a's prefill was marked done")
	// With the lock free, a report is applied at once.
	f.r.FreeNoWait(a.RequestID)
	f.r.mu.Lock()
	active := f.r.load.active()
	f.r.mu.Unlock()
	assert.Zero(t, active)
}

// Held requests' records and block lists are reused by later decisions;
// blocks the load observer was given are never reused under it.
func TestReusedRequestRecordsKeepEachRequestsBlocks(t *testing.T) {
	f := newFixture(t, 1, Options{})
	var seen [][]uint64
	var copies [][]uint64
	f.r.SetLoadObserver(func(ev LoadEvent) {
		if ev.Op == LoadRouted {
			seen = append(seen, ev.Blocks)
			copies = append(copies, slices.Clone(ev.Blocks))
		}
	})
	for i := range 20 {
		d, err := f.r.Route(Request{Model: "m", TokenIDs: tokens(uint32(1000*i), 4*(1+i%5)), Held: true})
		require.NoError(t, err)
		require.True(t, f.r.Free(d.RequestID))
	}
	assert.Equal(t, copies, seen, "the observer's blocks stayed as it was given them")

	f.r.SetLoadObserver(nil)
	var ids []string
	for i := range 50 {
		// Alternately long and short prompts over reused records.
		d, err := f.r.Route(Request{Model: "m", TokenIDs: tokens(uint32(7000+100*i), 4*(1+(i%2)*7)), Held: true})
		require.NoError(t, err)
		ids = append(ids, d.RequestID)
		if i%3 == 2 { // some end: their records serve the next ones
			require.True(t, f.r.Free(ids[0]))
			ids = ids[1:]
		}
	}
	// Each active request's load is its own blocks, whatever record it got.
	var want uint64
	f.r.mu.Lock()
	for _, id := range ids {
		want += uint64(len(f.r.load.requests[id].blocks))
	}
	f.r.mu.Unlock()
	st := f.r.Stats()
	require.Len(t, st.Workers, 1)
	assert.Equal(t, want, st.Workers[0].ActiveBlocks, "distinct prompts: every active block is one request's")
	for _, id := range ids {
		require.True(t, f.r.Free(id))
	}
	assert.Zero(t, f.r.Stats().ActiveRequests)
}

// A held request's block list is reused only once no run of the active
// tree is a part of it: a request that passes through the node another
// made keeps that node's hashes after the maker ends and its record
// serves other decisions.
func TestReusedBlockListsLeaveTheActiveTreeWhole(t *testing.T) {
	f := newFixture(t, 1, Options{})
	base := tokens(1, 8*bs)
	longer := append(slices.Clone(base), tokens(5000, 4*bs)...)
	maker, err := f.r.Route(Request{Model: "m", TokenIDs: base, Held: true})
	require.NoError(t, err)
	through, err := f.r.Route(Request{Model: "m", TokenIDs: longer, Held: true})
	require.NoError(t, err)
	require.True(t, f.r.Free(maker.RequestID))
	// Other prompts over the maker's record, and maybe its blocks.
	for i := range 20 {
		d, err := f.r.Route(Request{Model: "m", TokenIDs: tokens(uint32(9000+100*i), 8*bs), Held: true})
		require.NoError(t, err)
		require.True(t, f.r.Free(d.RequestID))
	}
	local, err := f.ix.HashPrompt(longer, indexer.PromptOptions{})
	require.NoError(t, err)
	seq := core.SequenceHashes(local)
	f.r.mu.Lock()
	depth := f.r.load.depths(seq, nil)
	f.r.mu.Unlock()
	require.Len(t, depth, 1)
	assert.Equal(t, uint32(len(seq)), depth[0], "the rank still has the whole longer prompt active")
	require.True(t, f.r.Free(through.RequestID))
	assert.Empty(t, f.r.load.chains.root.kids)
}
