package route

import (
	"time"

	"github.com/kvhash/kvhash/core"
)

// The engines' /metrics gauges in the predicted TTFT.
//
// The router's own load table is exact for what it sent, but an engine
// also queues what it cannot admit: at its max_num_seqs, or out of KV
// blocks, a request waits for a running one to end, however little
// prefill is queued ahead of it; and requests other routers sent are in
// its queue too. vLLM's num_requests_waiting says how many wait. A scrape
// is seconds old (Prometheus-like intervals), so the router moves it by
// what it did since: each request it routed there joins the queue, each
// one that ended frees a slot for a waiting one. The seconds one waiting
// request costs (e) are learned like the rest of the model.

// gaugeMaxAge: a scrape older than this is ignored (the scraper stopped,
// or the engine went away): the model falls back to the router's own
// table.
const gaugeMaxAge = 10 * time.Second

// rankGauges are one rank's gauges as last scraped, with the router's own
// in-flight requests there at that moment.
type rankGauges struct {
	waiting, running int
	kvUsage          float64
	ownRequests      int
	at               time.Time
}

// waitingNow is the engine's waiting queue now: the scraped count moved
// by the router's own requests routed there (ownRequests up) and ended
// (down) since, never below 0. An engine that showed none waiting was
// admitting everything: 0 until a scrape shows a queue.
func (g *rankGauges) waitingNow(ownRequests int, now time.Time) float64 {
	if g.waiting <= 0 || g.at.IsZero() || now.Sub(g.at) > gaugeMaxAge {
		return 0
	}
	return float64(max(0, g.waiting+ownRequests-g.ownRequests))
}

// EngineGauges are one engine rank's vLLM gauges as a scraper read them.
type EngineGauges struct {
	Waiting int     // vllm:num_requests_waiting
	Running int     // vllm:num_requests_running
	KVUsage float64 // vllm:kv_cache_usage_perc, 0..1
}

// ObserveGauges records a rank's scraped gauges, read at time at (the
// router's clock; zero: now). The predicted-TTFT cost reads the waiting
// queue from them (see waitingNow); Dynamo's cost ignores them. Negative
// or absurd counts are dropped.
func (r *Router) ObserveGauges(w core.Worker, g EngineGauges, at time.Time) {
	if g.Waiting < 0 || g.Running < 0 || g.Waiting > 1<<20 || g.Running > 1<<20 || !(g.KVUsage >= 0 && g.KVUsage <= 1) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if at.IsZero() {
		at = r.now()
	}
	s := r.load.slot(w)
	rl := r.load.ranks[s]
	rl.gauges = rankGauges{waiting: g.Waiting, running: g.Running, kvUsage: g.KVUsage, ownRequests: rl.requests, at: at}
}
