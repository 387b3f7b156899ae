package route

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
)

func TestWaitingNowMovesTheScrapeByTheRoutersOwnRequests(t *testing.T) {
	at := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name    string
		g       rankGauges
		own     int
		now     time.Time
		waiting float64
	}{
		{"never scraped", rankGauges{}, 5, at, 0},
		{"none waiting at the scrape: admitting everything", rankGauges{waiting: 0, ownRequests: 2, at: at}, 9, at.Add(time.Second), 0},
		{"as scraped", rankGauges{waiting: 7, ownRequests: 3, at: at}, 3, at.Add(time.Second), 7},
		{"routed 4 more since", rankGauges{waiting: 7, ownRequests: 3, at: at}, 7, at.Add(time.Second), 11},
		{"2 of ours ended since: 2 admitted", rankGauges{waiting: 7, ownRequests: 3, at: at}, 1, at.Add(time.Second), 5},
		{"more ended than waited", rankGauges{waiting: 2, ownRequests: 9, at: at}, 1, at.Add(time.Second), 0},
		{"stale scrape", rankGauges{waiting: 7, ownRequests: 3, at: at}, 3, at.Add(gaugeMaxAge + time.Second), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.waiting, c.g.waitingNow(c.own, c.now))
		})
	}
}

// An engine that admits only when a running request ends: each waiting
// request ahead costs e seconds. The model learns e from first tokens
// routed with the waiting count the gauges gave.
func TestTTFTModelLearnsTheWaitingTerm(t *testing.T) {
	p := DefaultTTFTPrior()
	m := newTTFTModel(p)
	rng := rand.New(rand.NewPCG(5, 6))
	truth := engineTruth{a: 0.03, b: 0.02, c: 0.003, d: 0.02}
	const e = 0.05
	for range 400 {
		work := uint64(rng.IntN(32_000))
		w := float64(rng.IntN(40))
		m.observe(p, p.theta(), work, 1, w, (truth.ttft(work, 1)+e*w)*(0.95+0.1*rng.Float64()))
	}
	got := m.predict(0, 8000, 1, 20)
	assert.InEpsilon(t, e, got.WaitSPerRequest, 0.15, "the learned e")
	assert.InEpsilon(t, truth.ttft(8000, 1)+e*20, got.TotalS, 0.1)
	assert.InDelta(t, 20*got.WaitSPerRequest, got.AdmitS, 1e-12)
}

// Two equal ranks, one of which reports a long waiting queue in its
// gauges (work another router sent, which this one cannot see): once the
// router has learned what a waiting request costs, new work goes to the
// other rank; bad gauges are dropped.
func TestRouterAvoidsARankWithAScrapedQueue(t *testing.T) {
	p := DefaultParams()
	p.Cost = CostTTFT
	f := newFixture(t, 2, Options{Params: &p})
	prompt := tokens(1, 2000)
	only := func(w uint64) func(uint64) bool { return func(id uint64) bool { return id == w } }
	// Teach both ranks' models: first tokens come 20 ms per waiting request
	// later than the prefill alone.
	for i := range 200 {
		waiting := i % 30
		f.r.ObserveGauges(core.Worker{ID: 0}, EngineGauges{Waiting: waiting, Running: 8}, time.Time{})
		id := fmt.Sprint("learn-", i)
		_, err := f.r.Route(Request{Model: "m", TokenIDs: prompt, RequestID: id, Eligible: only(0)})
		require.NoError(t, err)
		f.clock.Advance(60*time.Millisecond + time.Duration(waiting)*20*time.Millisecond)
		require.True(t, f.r.PrefillDone(id))
		require.True(t, f.r.Free(id))
	}
	f.r.ObserveGauges(core.Worker{ID: 0}, EngineGauges{Waiting: 40, Running: 256, KVUsage: 0.9}, time.Time{})
	f.r.ObserveGauges(core.Worker{ID: 1}, EngineGauges{Waiting: 0, Running: 3, KVUsage: 0.1}, time.Time{})
	f.r.ObserveGauges(core.Worker{ID: 1}, EngineGauges{Waiting: -1}, time.Time{})             // dropped
	f.r.ObserveGauges(core.Worker{ID: 1}, EngineGauges{Waiting: 50, KVUsage: 7}, time.Time{}) // dropped
	d, err := f.r.Route(Request{Model: "m", TokenIDs: prompt, RequestID: "next"})
	require.NoError(t, err)
	assert.Equal(t, uint64(1), d.WorkerID, "away from the scraped queue")
	terms := map[uint64]TTFTTerms{}
	for _, c := range d.Candidates {
		terms[c.WorkerID] = c.TTFT
	}
	assert.Equal(t, 40.0, terms[0].WaitingRequests)
	assert.InEpsilon(t, 0.02, terms[0].WaitSPerRequest, 0.3, "e learned from rank 0's first tokens")
	assert.Greater(t, terms[0].AdmitS, 0.5)
	assert.Zero(t, terms[1].WaitingRequests, "the bad gauges were dropped")
	// Past gaugeMaxAge without a scrape the queue is forgotten.
	require.True(t, f.r.Free("next"))
	f.clock.Advance(gaugeMaxAge + time.Second)
	d, err = f.r.Route(Request{Model: "m", TokenIDs: prompt, RequestID: "later"})
	require.NoError(t, err)
	for _, c := range d.Candidates {
		assert.Zero(t, c.TTFT.WaitingRequests, "worker %d", c.WorkerID)
	}
}
