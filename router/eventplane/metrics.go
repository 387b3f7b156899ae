package eventplane

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports a replica's Stats, its readiness and its leases as
// Prometheus metrics named <namespace>_eventplane_*.
func (p *Plane) Collector(namespace string) prometheus.Collector {
	return &collector{p: p, ns: namespace}
}

type collector struct {
	p  *Plane
	ns string
}

type counterOf struct {
	name, help string
	v          func(s *Stats) uint64
}

var counters = []counterOf{
	{"applied_total", "Stream messages applied to this replica's index.", func(s *Stats) uint64 { return s.Applied.Load() }},
	{"duplicates_total", "Batches and lost gaps skipped: their engine seq was applied already.", func(s *Stats) uint64 { return s.Duplicates.Load() }},
	{"malformed_total", "Stream messages that did not decode (skipped).", func(s *Stats) uint64 { return s.Malformed.Load() }},
	{"handler_panics_total", "Indexer panics recovered while applying.", func(s *Stats) uint64 { return s.HandlerPanics.Load() }},
	{"published_total", "Messages this replica published as an engine's holder.", func(s *Stats) uint64 { return s.Published.Load() }},
	{"publish_retries_total", "Publishes retried (NATS unreachable, timeouts).", func(s *Stats) uint64 { return s.PublishRetries.Load() }},
	{"dropped_total", "Publishes abandoned because the lease moved (the new holder replays them).", func(s *Stats) uint64 { return s.Dropped.Load() }},
	{"oversized_total", "Batches over NATS's max_payload, published as lost gaps instead.", func(s *Stats) uint64 { return s.Oversized.Load() }},
	{"leases_taken_total", "Engine leases acquired.", func(s *Stats) uint64 { return s.LeasesTaken.Load() }},
	{"leases_lost_total", "Engine leases lost (taken over, or not renewed in time).", func(s *Stats) uint64 { return s.LeasesLost.Load() }},
	{"snapshots_total", "Snapshots written to the object store.", func(s *Stats) uint64 { return s.Snapshots.Load() }},
	{"snapshot_errors_total", "Snapshot writes that failed.", func(s *Stats) uint64 { return s.SnapshotErrors.Load() }},
	{"remote_requests_total", "Other replicas' requests added to the load.", func(s *Stats) uint64 { return s.RemoteRouted.Load() }},
	{"load_dropped_total", "Own load changes not sent to the others: the send queue was full.", func(s *Stats) uint64 { return s.LoadDropped.Load() }},
	{"handed_over_total", "Engine leases released to the engine's preferred replica (rendezvous hashing over the live replicas).", func(s *Stats) uint64 { return s.HandedOver.Load() }},
	{"resyncs_total", "Stream positions dropped and engines rebuilt: the stream was recreated or its sequence went back.", func(s *Stats) uint64 { return s.Resyncs.Load() }},
	{"remote_expired_total", "Requests expired because their replica vanished or restarted.", func(s *Stats) uint64 { return s.RemoteExpired.Load() }},
}

func (c *collector) desc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(c.ns, "eventplane", name), help, nil, prometheus.Labels{"replica": c.p.opts.ReplicaID})
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := &c.p.stats
	for _, k := range counters {
		ch <- prometheus.MustNewConstMetric(c.desc(k.name, k.help), prometheus.CounterValue, float64(k.v(s)))
	}
	ready, _ := c.p.Ready()
	r := 0.0
	if ready {
		r = 1
	}
	ch <- prometheus.MustNewConstMetric(c.desc("ready", "1 while connected to NATS and caught up on the stream."), prometheus.GaugeValue, r)
	ch <- prometheus.MustNewConstMetric(c.desc("applied_stream_seq", "The last stream sequence applied."), prometheus.GaugeValue, float64(c.p.appliedSeq.Load()))
	ch <- prometheus.MustNewConstMetric(c.desc("leases_held", "Engines this replica ingests."), prometheus.GaugeValue, float64(len(c.p.Holding())))
	ch <- prometheus.MustNewConstMetric(c.desc("stream_span_seconds", "The time the event stream's messages span, at the last snapshot: keep it above a few snapshot intervals."),
		prometheus.GaugeValue, time.Duration(c.p.streamSpan.Load()).Seconds())
	ch <- prometheus.MustNewConstMetric(c.desc("peers", "Other replicas heard from within the replica timeout."), prometheus.GaugeValue, float64(len(c.p.Peers())))
}
