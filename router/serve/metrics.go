package serve

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/indexer"
)

// metrics are the series the server updates itself; the fleet's counters
// are read from the indexer at scrape time (fleetCollector), so they are
// never counted twice nor drift from GET /v1/workers.
type metrics struct {
	routeLatency   prometheus.Histogram
	routeOverlap   prometheus.Histogram
	routes         *prometheus.CounterVec
	routeOK        prometheus.Counter // routes' children, looked up once
	routeErrors    prometheus.Counter
	httpRequests   *prometheus.CounterVec
	panics         prometheus.Counter
	replayRequests prometheus.Counter
	snapshots      *prometheus.CounterVec
}

func newMetrics(s *Server) (*prometheus.Registry, *metrics) {
	reg := prometheus.NewRegistry()
	m := &metrics{
		routeLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kvrouter_route_duration_seconds", Help: "Time to answer POST /v1/route, from body read to response.",
			Buckets: []float64{25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 100e-3},
		}),
		routeOverlap: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kvrouter_route_overlap_blocks", Help: "Cached prefix blocks of the chosen worker per routed request.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 12),
		}),
		routes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kvrouter_routes_total", Help: "Routing decisions by result.",
		}, []string{"result"}),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kvrouter_http_requests_total", Help: "HTTP requests by route pattern and status code.",
		}, []string{"pattern", "code"}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kvrouter_http_panics_total", Help: "HTTP handler panics recovered (each answered 500 and logged).",
		}),
		replayRequests: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kvrouter_quarantine_replay_requests_total", Help: "Replays requested because a worker was quarantined.",
		}),
		snapshots: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kvrouter_snapshot_writes_total", Help: "Snapshot writes by result.",
		}, []string{"result"}),
	}
	m.routeOK, m.routeErrors = m.routes.WithLabelValues("ok"), m.routes.WithLabelValues("error")
	reg.MustRegister(m.routeLatency, m.routeOverlap, m.routes, m.httpRequests, m.panics, m.replayRequests, m.snapshots,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&fleetCollector{s: s})
	return reg, m
}

var rankLabels = []string{"model", "tenant", "worker_id", "dp_rank"}

func rankDesc(name, help string, extra ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append(append([]string{}, rankLabels...), extra...), nil)
}

var (
	descEvents = rankDesc("kvrouter_events_total",
		"Engine KV events by kind (stored, removed, cleared) and outcome (applied, violation, rejected, skipped).", "kind", "outcome")
	descSkipped = rankDesc("kvrouter_skipped_blocks_total",
		"Blocks not indexed, by reason (block_size, kv_cache_spec_kind, remote, placeholder, medium, ...).", "reason")
	descViolations = rankDesc("kvrouter_stability_violations_total",
		"Engine hash stability violations (see docs/guides/hash-stability.md) by kind.", "kind")
	descGaps      = rankDesc("kvrouter_gaps_lost_total", "Seq gaps that could not be replayed (the rank was degraded).")
	descReplayed  = rankDesc("kvrouter_gaps_replayed_total", "Seq gaps filled from the engine's replay endpoint.")
	descRestarts  = rankDesc("kvrouter_engine_restarts_total", "Engine restarts seen (seq back to 0).")
	descMalformed = rankDesc("kvrouter_malformed_messages_total", "Messages that could not be decoded and were skipped.")
	descQuar      = rankDesc("kvrouter_quarantines_total", "Times the rank was quarantined (enforce mode).")
	descLastSeq   = rankDesc("kvrouter_last_seq", "Last seq handled from the rank's publisher.")
	descLag       = rankDesc("kvrouter_lag_seconds", "How far the last batch's engine timestamp was behind the router's clock.")
	descBlocks    = rankDesc("kvrouter_worker_blocks", "Blocks the rank holds in the index.")
	descState     = rankDesc("kvrouter_worker_state", "1 for the rank's current state (live, degraded, quarantined, connecting), else 0.", "state")
	descConnected = rankDesc("kvrouter_worker_connected", "1 when the rank's event stream is connected.")
	descNodes     = prometheus.NewDesc("kvrouter_index_nodes", "Radix tree nodes of one index (blocks, shared ones once).", []string{"model", "tenant"}, nil)
	descPairs     = prometheus.NewDesc("kvrouter_index_blocks", "(worker rank, block) pairs held in one index.", []string{"model", "tenant"}, nil)
	descWorkers   = prometheus.NewDesc("kvrouter_workers", "Registered workers.", nil, nil)
	descActive    = prometheus.NewDesc("kvrouter_active_requests", "Routed requests whose load still counts.", nil, nil)
	descExpired   = prometheus.NewDesc("kvrouter_expired_requests_total", "Routed requests never freed that expired.", nil, nil)
)

// fleetCollector reads the indexer's and router's counters at scrape time.
type fleetCollector struct{ s *Server }

func (c *fleetCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descEvents, descSkipped, descViolations, descGaps, descReplayed, descRestarts,
		descMalformed, descQuar, descLastSeq, descLag, descBlocks, descState, descConnected, descNodes, descPairs,
		descWorkers, descActive, descExpired} {
		ch <- d
	}
	for _, d := range engineHashDescs {
		ch <- d
	}
}

func (c *fleetCollector) Collect(ch chan<- prometheus.Metric) {
	infos := c.s.ix.Workers()
	ch <- prometheus.MustNewConstMetric(descWorkers, prometheus.GaugeValue, float64(len(infos)))
	for _, info := range infos {
		for _, ri := range info.Ranks {
			lv := []string{info.Spec.Model, info.Spec.Tenant, strconv.FormatUint(ri.Worker.ID, 10), strconv.FormatUint(uint64(ri.Worker.DPRank), 10)}
			collectRank(ch, lv, ri)
			collectEngineHash(ch, lv, ri.EngineHash)
		}
	}
	collectAgreement(ch, c.s.ix.HashAgreements())
	for _, sz := range c.s.ix.Sizes() {
		ch <- prometheus.MustNewConstMetric(descNodes, prometheus.GaugeValue, float64(sz.Nodes), sz.Key.Model, sz.Key.Tenant)
		ch <- prometheus.MustNewConstMetric(descPairs, prometheus.GaugeValue, float64(sz.Pairs), sz.Key.Model, sz.Key.Tenant)
	}
	ls := c.s.rt.Stats()
	ch <- prometheus.MustNewConstMetric(descActive, prometheus.GaugeValue, float64(ls.ActiveRequests))
	ch <- prometheus.MustNewConstMetric(descExpired, prometheus.CounterValue, float64(ls.Expired))
}

func collectRank(ch chan<- prometheus.Metric, lv []string, ri indexer.RankInfo) {
	with := func(extra ...string) []string { return append(append(make([]string, 0, len(lv)+2), lv...), extra...) }
	counter := func(d *prometheus.Desc, v uint64, extra ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), with(extra...)...)
	}
	gauge := func(d *prometheus.Desc, v float64, extra ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, with(extra...)...)
	}
	for k := range indexer.NumEventKinds {
		for o := range indexer.NumOutcomes {
			counter(descEvents, ri.Events[k][o], k.String(), o.String())
		}
	}
	for r := range indexer.NumSkipReasons {
		counter(descSkipped, ri.Skipped[r], r.String())
	}
	for k, n := range ri.Violations {
		counter(descViolations, n, violationName(k))
	}
	counter(descGaps, ri.Gaps)
	counter(descReplayed, ri.Replayed)
	counter(descRestarts, ri.Restarts)
	counter(descMalformed, ri.Malformed)
	counter(descQuar, ri.Quarantines)
	if ri.HaveSeq {
		gauge(descLastSeq, float64(ri.LastSeq))
	}
	gauge(descLag, ri.LagSeconds)
	gauge(descBlocks, float64(ri.Blocks))
	for _, st := range []indexer.State{indexer.StateLive, indexer.StateDegraded, indexer.StateQuarantined, indexer.StateConnecting} {
		v := 0.0
		if ri.State == st {
			v = 1
		}
		gauge(descState, v, st.String())
	}
	conn := 0.0
	if ri.Connected {
		conn = 1
	}
	gauge(descConnected, conn)
}

func violationName(k int) string { return core.Violation(k).String() }
