package proxy

import (
	"bufio"
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/route"
	"github.com/kvhash/kvhash/router/route/policy"
)

// peers runs the policies of router/route/policy that the proxy does not
// implement itself (the peers' formulas: dynamo, llmd, llmd-precise,
// sglang), so that a live fleet can be A/B-tested against them with the
// X-Kvrouter-Policy header. Each (policy, model) has its own instance:
// the approximate indexes and the dynamo policy's load table are per
// model, as the peers keep them.
type peers struct {
	mu        sync.Mutex
	instances map[peerKey]policy.Policy
	tokens    map[uint64]int // in-flight prompt tokens per worker, of the requests peer policies routed

	// metrics: each engine's vLLM gauges, scraped from its base URL's
	// /metrics beside the health check once a policy that reads them was
	// used (so a fleet that never asks for llm-d is not scraped).
	wantMetrics atomic.Bool
	metricsMu   sync.Mutex
	metrics     map[uint64]policy.Metrics

	// seq names the requests peer policies route: names in their own
	// load tables, which no client of /v1/route can reach.
	seq atomic.Uint64
}

type peerKey struct{ name, model string }

func newPeers() *peers {
	return &peers{instances: map[peerKey]policy.Policy{}, tokens: map[uint64]int{}, metrics: map[uint64]policy.Metrics{}}
}

// readsMetrics: the policies that read engines' scraped gauges.
func readsMetrics(name string) bool { return name == policy.LLMD || name == policy.LLMDPrecise }

// pickPeer chooses a worker with a router/route/policy policy. The rows
// are the candidate ranks with a base URL; their in-flight requests and
// tokens are the proxy's own counts, their gauges the last scrape.
func (p *Proxy) pickPeer(pol Policy, req clientRequest, tokens []uint32) (target, error) {
	name := string(pol)
	key := indexer.ModelKey{Model: req.Model}
	cands, err := p.ix.Candidates(key)
	if err != nil {
		return target{}, routeError(err)
	}
	local, err := p.ix.HashPrompt(tokens, indexer.PromptOptions{CacheSalt: req.CacheSalt})
	if err != nil {
		return target{}, routeError(err)
	}
	if readsMetrics(name) {
		p.peers.wantMetrics.Store(true)
	}
	id := "kvp-" + strconv.FormatUint(p.peers.seq.Add(1), 10)
	q := &policy.Query{RequestID: id, Tokens: tokens, Blocks: core.SequenceHashes(local)}

	rows := make([]policy.Row, 0, len(cands))
	for _, c := range cands {
		if p.baseURL(c.Worker.ID) != "" {
			rows = append(rows, policy.Row{Worker: c.Worker})
		}
	}
	p.peers.metricsMu.Lock()
	reachable := len(rows)
	for i := range rows {
		id := rows[i].Worker.ID
		rows[i].Requests, rows[i].Metrics = p.slots.inUse(id), p.peers.metrics[id]
	}
	// Only the workers with a free slot (backpressure, admission.go).
	rows = slices.DeleteFunc(rows, func(r policy.Row) bool { return !p.slots.free(r.Worker.ID) })
	p.peers.metricsMu.Unlock()
	if reachable == 0 {
		return target{}, unavailable("no_worker", "model %q has no healthy worker with a base_url", req.Model)
	}
	if len(rows) == 0 {
		return target{}, errSaturated
	}

	p.peers.mu.Lock()
	defer p.peers.mu.Unlock()
	inst, err := p.peerInstanceLocked(name, req.Model)
	if err != nil {
		return target{}, badRequest("invalid_policy", "%v", err)
	}
	for i := range rows {
		rows[i].Tokens = p.peers.tokens[rows[i].Worker.ID]
	}
	if r, ok := inst.(policy.OverlapReader); ok && r.ReadsOverlap() {
		ovs, err := p.ix.Overlaps(key, local, false)
		if err != nil {
			return target{}, routeError(err)
		}
		for _, o := range ovs {
			for i := range rows {
				if rows[i].Worker == o.Worker {
					rows[i].Overlap = o.Blocks
				}
			}
		}
	}
	i, err := inst.Pick(q, rows)
	if err != nil {
		return target{}, routeError(err)
	}
	w := rows[i].Worker.ID
	tracker, _ := inst.(policy.Tracker)
	if !p.slots.take(w) {
		if tracker != nil {
			tracker.Free(id)
		}
		return target{}, errSaturated // another request took its last slot meanwhile
	}
	p.peers.tokens[w] += len(tokens)
	u := p.baseURL(w)
	return target{WorkerID: w, BaseURL: u, Model: req.Model, RequestID: id, tracker: tracker, promptTokens: len(tokens)}, nil
}

func (p *Proxy) peerInstanceLocked(name, model string) (policy.Policy, error) {
	k := peerKey{name, model}
	if inst, ok := p.peers.instances[k]; ok {
		return inst, nil
	}
	p.mu.Lock()
	seed := p.rng.Uint64()
	p.mu.Unlock()
	inst, err := policy.New(name, policy.Env{
		Seed: seed, Indexer: p.ix, Model: model, Dynamo: p.rt.Params(), RequestTTL: route0TTL,
	})
	if err != nil {
		return nil, err
	}
	p.peers.instances[k] = inst
	return inst, nil
}

// route0TTL: the peer routers' TTL for requests never freed (the proxy
// frees every request it routes; this only bounds a leak).
const route0TTL = 10 * time.Minute

// releasePeer ends a peer-routed request's load.
func (p *Proxy) releasePeer(t target) {
	if t.tracker != nil {
		t.tracker.Free(t.RequestID)
	}
	p.peers.mu.Lock()
	if p.peers.tokens[t.WorkerID] <= t.promptTokens {
		delete(p.peers.tokens, t.WorkerID)
	} else {
		p.peers.tokens[t.WorkerID] -= t.promptTokens
	}
	p.peers.mu.Unlock()
}

// scrapeMetrics reads each engine's vLLM gauges from its /metrics, once
// a policy that reads them has been used, or always when the router's
// cost is the predicted TTFT (its waiting-queue term reads them; see
// router/route/gauges.go).
func (p *Proxy) scrapeMetrics(urls map[uint64]string) {
	feed := p.rt != nil && p.rt.Params().Cost == route.CostTTFT
	if !p.peers.wantMetrics.Load() && !feed {
		return
	}
	got := make(map[uint64]policy.Metrics, len(urls))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for id, base := range urls {
		if base == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if m, ok := p.scrapeOne(base); ok {
				mu.Lock()
				got[id] = m
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	p.peers.metricsMu.Lock()
	p.peers.metrics = got
	p.peers.metricsMu.Unlock()
	if feed {
		// An engine's gauges are summed over its series: they go to its
		// rank 0 (a URL is one engine; splitting them by data-parallel
		// rank would need each series' rank label).
		for id, m := range got {
			waiting := m.Waiting + p.slotsHeld(id) // the proxy's own queue for the engine's slots
			p.rt.ObserveGauges(core.Worker{ID: id}, route.EngineGauges{Waiting: waiting, Running: m.Running, KVUsage: m.KVUsage}, time.Time{})
		}
	}
}

func (p *Proxy) scrapeOne(base string) (policy.Metrics, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.HealthTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return policy.Metrics{}, false
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return policy.Metrics{}, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return policy.Metrics{}, false
	}
	return parseVLLMGauges(bufio.NewScanner(resp.Body)), true
}

// parseVLLMGauges reads the three gauges llm-d's scorers use from a
// Prometheus text exposition, summed over their label sets (one engine
// may expose one series per model or rank).
func parseVLLMGauges(sc *bufio.Scanner) policy.Metrics {
	var m policy.Metrics
	var kv float64
	var kvSeries int
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest, ok := strings.Cut(line, " ")
		if i := strings.IndexByte(line, '{'); i >= 0 {
			name = line[:i]
			if j := strings.LastIndexByte(line, '}'); j > i {
				rest, ok = strings.TrimSpace(line[j+1:]), true
			}
		}
		if !ok {
			continue
		}
		field, _, _ := strings.Cut(strings.TrimSpace(rest), " ")
		v, err := strconv.ParseFloat(field, 64)
		if err != nil {
			continue
		}
		switch name {
		case "vllm:num_requests_waiting":
			m.Waiting += int(v)
		case "vllm:num_requests_running":
			m.Running += int(v)
		case "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc":
			kv += v
			kvSeries++
		}
	}
	if kvSeries > 0 {
		m.KVUsage = kv / float64(kvSeries)
	}
	return m
}
