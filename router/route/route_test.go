package route

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/ingest"
)

const bs = 4

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type fixture struct {
	t     *testing.T
	ix    *indexer.Indexer
	r     *Router
	clock *clock
}

func newFixture(t *testing.T, workers int, opts Options) *fixture {
	t.Helper()
	c := &clock{t: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)}
	ix, err := indexer.New(indexer.Options{BlockSize: bs, Mode: core.ModeWarn, Now: c.Now})
	require.NoError(t, err)
	for id := range uint64(workers) {
		_, err := ix.AddWorker(indexer.WorkerSpec{WorkerID: id, Model: "m"})
		require.NoError(t, err)
	}
	if opts.Seed == 0 {
		opts.Seed = 42
	}
	opts.Now = c.Now
	r, err := New(ix, opts)
	require.NoError(t, err)
	return &fixture{t: t, ix: ix, r: r, clock: c}
}

func tokens(first uint32, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = first + uint32(i)
	}
	return out
}

// cache makes worker id hold the prompt's first full blocks.
func (f *fixture) cache(id uint64, prompt []uint32, blocks int) {
	hashes := make([]uint64, blocks)
	for i := range hashes {
		hashes[i] = id<<32 | uint64(i+1)
	}
	f.ix.HandleBatch(ingest.Source{WorkerID: id, Model: "m"}, &ingest.Batch{Events: []ingest.Event{{
		Kind: ingest.BlockStored, BlockHashes: hashes, TokenIDs: prompt[:blocks*bs], BlockSize: bs,
	}}})
}

func TestRouteToTheBestOverlapAndTrackLoad(t *testing.T) {
	f := newFixture(t, 3, Options{})
	prompt := tokens(1, 16) // 4 blocks
	f.cache(1, prompt, 3)

	d, err := f.r.Route(Request{Model: "m", TokenIDs: prompt, RequestID: "a"})
	require.NoError(t, err)
	// Worker 1: raw 16/4 = 4, credit 3, prefill 1, decode 4 new blocks: 5.
	// Others: 4 + 4 = 8.
	assert.Equal(t, Decision{WorkerID: 1, OverlapBlocks: 3, Cost: 5, RequestID: "a", Candidates: []Candidate{
		{WorkerID: 1, OverlapBlocks: 3, Cost: 5, PrefillBlocks: 1, DecodeBlocks: 4},
		{WorkerID: 0, Cost: 8, PrefillBlocks: 4, DecodeBlocks: 4},
		{WorkerID: 2, Cost: 8, PrefillBlocks: 4, DecodeBlocks: 4},
	}}, d)
	assert.Equal(t, LoadStats{ActiveRequests: 1, Workers: []WorkerLoad{
		{Worker: core.Worker{ID: 1}, Requests: 1, PrefillTokens: 4, ActiveBlocks: 4},
	}}, f.r.Stats(), "the uncached tokens prefill; the blocks decode")

	// The same prompt again: worker 1 has 4 prefill tokens and the 4 blocks
	// active already: raw (4+16)/4 = 5, credit 3: 2; decode 4 + 0 new: 6.
	d, err = f.r.Route(Request{Model: "m", TokenIDs: prompt, RequestID: "b"})
	require.NoError(t, err)
	assert.Equal(t, uint64(1), d.WorkerID)
	assert.Equal(t, 6.0, d.Cost)
	assert.Equal(t, uint64(4), d.Candidates[0].DecodeBlocks, "shared blocks count once")

	assert.True(t, f.r.PrefillDone("a"))
	assert.Equal(t, uint64(4), f.r.Stats().Workers[0].PrefillTokens)
	assert.True(t, f.r.Free("b"))
	assert.Equal(t, []WorkerLoad{{Worker: core.Worker{ID: 1}, Requests: 1, ActiveBlocks: 4}}, f.r.Stats().Workers)
	assert.True(t, f.r.Free("a"))
	assert.False(t, f.r.Free("a"))
	assert.False(t, f.r.PrefillDone("a"))
	assert.Equal(t, LoadStats{Workers: []WorkerLoad{}}, f.r.Stats())
}

func TestLoadSpreadsRequestsWithoutOverlap(t *testing.T) {
	f := newFixture(t, 2, Options{})
	seen := map[uint64]int{}
	for i := range 4 {
		d, err := f.r.Route(Request{Model: "m", TokenIDs: tokens(uint32(1000*i), 8)})
		require.NoError(t, err)
		seen[d.WorkerID]++
	}
	assert.Equal(t, map[uint64]int{0: 2, 1: 2}, seen, "each route adds load, so the next goes elsewhere")
}

func TestRequestsExpire(t *testing.T) {
	f := newFixture(t, 1, Options{RequestTTL: 10 * time.Second})
	_, err := f.r.Route(Request{Model: "m", TokenIDs: tokens(1, 8), RequestID: "old"})
	require.NoError(t, err)
	f.clock.Advance(6 * time.Second)
	_, err = f.r.Route(Request{Model: "m", TokenIDs: tokens(1, 8), RequestID: "new"})
	require.NoError(t, err)
	f.clock.Advance(5 * time.Second)
	assert.Equal(t, 1, f.r.Expire())
	st := f.r.Stats()
	assert.Equal(t, 1, st.ActiveRequests)
	assert.Equal(t, uint64(1), st.Expired)
	assert.False(t, f.r.Free("old"), "expired")
	assert.True(t, f.r.Free("new"))
	f.clock.Advance(time.Hour)
	assert.Zero(t, f.r.Expire(), "freed requests do not expire")
}

func TestRouteErrors(t *testing.T) {
	f := newFixture(t, 1, Options{})
	_, err := f.r.Route(Request{Model: "other", TokenIDs: tokens(1, 4)})
	assert.ErrorIs(t, err, indexer.ErrUnknownModel)
	_, err = f.r.Route(Request{Model: "m", TokenIDs: tokens(1, 4), RequestID: "x"})
	require.NoError(t, err)
	_, err = f.r.Route(Request{Model: "m", TokenIDs: tokens(1, 4), RequestID: "x"})
	assert.ErrorIs(t, err, ErrDuplicateRequest)
	_, err = f.r.Route(Request{Model: "m", TokenIDs: tokens(1, 4), Override: &Override{OverlapScoreCredit: f64(2)}})
	assert.ErrorIs(t, err, ErrInvalidParams)
	require.NoError(t, f.ix.SetHealthy(0, false))
	_, err = f.r.Route(Request{Model: "m", TokenIDs: tokens(1, 4)})
	assert.ErrorIs(t, err, ErrNoCandidates)
	_, err = New(f.ix, Options{Params: &Params{OverlapScoreCredit: -1}})
	assert.ErrorIs(t, err, ErrInvalidParams)
}

func TestDegradedWorkersScoreByLoadOnly(t *testing.T) {
	f := newFixture(t, 2, Options{})
	prompt := tokens(1, 16)
	f.cache(1, prompt, 4)
	f.ix.HandleStream(ingest.Source{WorkerID: 1, Model: "m"}, ingest.StreamEvent{Kind: ingest.StreamGapLost, From: 1, To: 2})
	f.cache(1, prompt, 4) // rebuilt blocks, not yet trusted
	d, err := f.r.Route(Request{Model: "m", TokenIDs: prompt})
	require.NoError(t, err)
	for _, c := range d.Candidates {
		assert.Zero(t, c.OverlapBlocks)
		if c.WorkerID == 1 {
			assert.Equal(t, indexer.StateDegraded, c.State)
		}
	}
}

func TestOverrideChangesTheChoice(t *testing.T) {
	f := newFixture(t, 2, Options{})
	// Worker 1 decodes an 8-block request (its prefill done).
	require.NoError(t, f.ix.SetHealthy(0, false))
	_, err := f.r.Route(Request{Model: "m", TokenIDs: tokens(5000, 32), RequestID: "busy"})
	require.NoError(t, err)
	require.True(t, f.r.PrefillDone("busy"))
	require.NoError(t, f.ix.SetHealthy(0, true))
	prompt := tokens(1, 64) // 16 blocks, all cached on worker 1
	f.cache(1, prompt, 16)

	cases := []struct {
		name         string
		o            *Override
		worker       uint64
		cost0, cost1 float64
	}{
		// Worker 1: prefill 16 - 16 = 0, decode 8 + 16 = 24; worker 0: 16 + 16.
		{"defaults: the cache wins", nil, 1, 32, 24},
		// No credit: worker 1 pays the full prefill too: 16 + 24.
		{"no credit", &Override{OverlapScoreCredit: f64(0)}, 0, 32, 40},
		// The deprecated weight scales prefill: 0 leaves decode only.
		{"deprecated weight 0", &Override{OverlapScoreWeight: f64(0)}, 0, 16, 24},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := f.r.Route(Request{Model: "m", TokenIDs: prompt, Override: tc.o})
			require.NoError(t, err)
			defer f.r.Free(d.RequestID)
			assert.Equal(t, tc.worker, d.WorkerID)
			costs := map[uint64]float64{}
			for _, c := range d.Candidates {
				costs[c.WorkerID] = c.Cost
			}
			assert.Equal(t, map[uint64]float64{0: tc.cost0, 1: tc.cost1}, costs)
		})
	}
}

func TestTiesAreBrokenAtRandom(t *testing.T) {
	f := newFixture(t, 3, Options{})
	seen := map[uint64]int{}
	for range 600 {
		d, err := f.r.Route(Request{Model: "m", TokenIDs: tokens(1, 8)})
		require.NoError(t, err)
		seen[d.WorkerID]++
		require.True(t, f.r.Free(d.RequestID))
	}
	for id := range uint64(3) {
		assert.Greater(t, seen[id], 120, "worker %d picked %d times of 600", id, seen[id])
	}
}

func TestTemperatureSamplesTheSoftmax(t *testing.T) {
	f := newFixture(t, 2, Options{})
	prompt := tokens(1, 16)
	f.cache(1, prompt, 4)
	// Costs: worker 1: prefill 0 + decode 4 = 4; worker 0: 4 + 4 = 8.
	// Logits with T = 1: 0 and -1, so worker 1 has e/(e+1) = 0.731.
	const n = 4000
	picked := 0
	for range n {
		d, err := f.r.Route(Request{Model: "m", TokenIDs: prompt, Override: &Override{RouterTemperature: f64(1)}})
		require.NoError(t, err)
		if d.WorkerID == 1 {
			picked++
		}
		require.True(t, f.r.Free(d.RequestID))
	}
	want := math.E / (math.E + 1)
	assert.InDelta(t, want, float64(picked)/n, 0.04)
}

// Freed requests do not pile up in the expiry queue at high rates.
func TestExpiryQueueStaysBounded(t *testing.T) {
	f := newFixture(t, 2, Options{})
	_, err := f.r.Route(Request{Model: "m", TokenIDs: tokens(1, 8), RequestID: "long-lived"})
	require.NoError(t, err)
	for range 5000 {
		d, err := f.r.Route(Request{Model: "m", TokenIDs: tokens(1, 8)})
		require.NoError(t, err)
		require.True(t, f.r.Free(d.RequestID))
	}
	f.r.mu.Lock()
	queued := len(f.r.load.order)
	f.r.mu.Unlock()
	assert.LessOrEqual(t, queued, 1100)
	f.clock.Advance(DefaultRequestTTL + time.Second)
	assert.Equal(t, 1, f.r.Expire(), "the live request still expires")
	assert.Zero(t, f.r.Stats().ActiveRequests)
}

// The names the router makes up never take a name a client gave a
// request still active: "kvr-1" routed by a client, the next generated
// name is another.
func TestGeneratedRequestIDsSkipClientNames(t *testing.T) {
	f := newFixture(t, 2, Options{})
	for _, id := range []string{"kvr-1", "kvr-2", "kvr-4"} {
		_, err := f.r.Route(Request{Model: "m", TokenIDs: tokens(1, 8), RequestID: id})
		require.NoError(t, err)
	}
	seen := map[string]bool{"kvr-1": true, "kvr-2": true, "kvr-4": true}
	for range 3 {
		d, err := f.r.Route(Request{Model: "m", TokenIDs: tokens(1, 8)})
		require.NoError(t, err)
		assert.False(t, seen[d.RequestID], "generated %q twice", d.RequestID)
		seen[d.RequestID] = true
	}
	assert.Equal(t, 6, f.r.Stats().ActiveRequests)
}

// Eligible keeps only the workers it accepts, even against a better
// overlap elsewhere; none reachable is ErrNoCandidates.
func TestRouteOnlyToReachableWorkers(t *testing.T) {
	f := newFixture(t, 3, Options{})
	prompt := tokens(1, 16)
	f.cache(1, prompt, 4)
	d, err := f.r.Route(Request{Model: "m", TokenIDs: prompt, Eligible: func(id uint64) bool { return id != 1 }})
	require.NoError(t, err)
	assert.NotEqual(t, uint64(1), d.WorkerID)
	assert.Len(t, d.Candidates, 2)
	_, err = f.r.Route(Request{Model: "m", TokenIDs: prompt, Eligible: func(uint64) bool { return false }})
	assert.ErrorIs(t, err, ErrNoCandidates)
}

// A held request (the proxy's, freed when its answer ends) never
// expires; the others still do, and the held one frees as usual.
func TestHeldRequestsNeverExpire(t *testing.T) {
	f := newFixture(t, 2, Options{RequestTTL: time.Minute})
	_, err := f.r.Route(Request{Model: "m", TokenIDs: tokens(1, 8), RequestID: "stream", Held: true})
	require.NoError(t, err)
	_, err = f.r.Route(Request{Model: "m", TokenIDs: tokens(1, 8), RequestID: "lost"})
	require.NoError(t, err)
	f.clock.Advance(time.Hour)
	assert.Equal(t, 1, f.r.Expire(), "only the request nobody holds")
	assert.Equal(t, 1, f.r.Stats().ActiveRequests)
	assert.True(t, f.r.Free("stream"))
	assert.Zero(t, f.r.Stats().ActiveRequests)
	assert.Zero(t, f.r.load.dead, "no order entry left behind")
}
