package ingest

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports a Subscriber's Stats as Prometheus metrics, read at
// scrape time (the counters stay plain atomics on the hot path). Register
// it once: prometheus.MustRegister(ingest.NewCollector("kvrouter", sub.Stats())).
type Collector struct {
	stats *Stats

	messages, batches, duplicates, unknown, panics, queueWaits, gateWaits *prometheus.Desc
	events, malformed, gaps, replays                                      *prometheus.Desc
	restarts, connects, disconnects, oversized                            *prometheus.Desc
	lastSeq, lag, connected, sourceBatches                                *prometheus.Desc
}

// NewCollector describes the metrics under namespace_ingest_*.
func NewCollector(namespace string, stats *Stats) *Collector {
	name := func(n string) string { return prometheus.BuildFQName(namespace, "ingest", n) }
	desc := func(n, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name(n), help, labels, nil)
	}
	src := []string{"model", "worker_id", "dp_rank"}
	return &Collector{
		stats:         stats,
		messages:      desc("messages_total", "Engine messages received, live and replayed."),
		batches:       desc("batches_total", "Event batches delivered to the indexer."),
		duplicates:    desc("duplicates_total", "Live messages dropped because a replay had delivered them."),
		unknown:       desc("unknown_events_total", "Events of an unknown kind left out of their batch."),
		panics:        desc("handler_panics_total", "Handler calls that panicked (recovered)."),
		queueWaits:    desc("queue_waits_total", "Times a receiver waited for a full per-engine queue (back-pressure, nothing dropped)."),
		gateWaits:     desc("gate_waits_total", "Times an ingest goroutine waited for one of ingest_workers' tokens: a batch to decode, or a connection's reader.", "waiter"),
		events:        desc("events_total", "Engine events delivered, by kind.", "kind"),
		malformed:     desc("malformed_total", "Messages skipped as malformed, by reason.", "reason"),
		gaps:          desc("gaps_total", "Seq gaps: detected, and how they ended (replayed or lost).", "outcome"),
		replays:       desc("replays_total", "Replay requests to engines, by outcome.", "outcome"),
		restarts:      desc("restarts_total", "Engine restarts (seq back to 0)."),
		connects:      desc("connects_total", "Engine stream connections made."),
		disconnects:   desc("disconnects_total", "Engine stream connections lost."),
		oversized:     desc("oversized_messages_total", "ZeroMQ peers' connections dropped for a message over zmq_max_message_bytes."),
		lastSeq:       desc("last_seq", "The last seq delivered per engine rank.", src...),
		lag:           desc("lag_seconds", "Receive time minus the engine's batch timestamp, last batch, per engine rank.", src...),
		connected:     desc("connected", "1 when the engine rank's stream is connected.", src...),
		sourceBatches: desc("source_batches_total", "Batches delivered per engine rank.", src...),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.messages, c.batches, c.duplicates, c.unknown, c.panics, c.queueWaits, c.gateWaits,
		c.events, c.malformed, c.gaps, c.replays, c.restarts, c.connects, c.disconnects, c.oversized,
		c.lastSeq, c.lag, c.connected, c.sourceBatches} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter(c.messages, s.Messages.Load())
	counter(c.batches, s.Batches.Load())
	counter(c.duplicates, s.Duplicates.Load())
	counter(c.unknown, s.UnknownEvents.Load())
	counter(c.panics, s.HandlerPanics.Load())
	counter(c.queueWaits, s.QueueWaits.Load())
	counter(c.gateWaits, s.WorkerWaits.Load(), "decoder")
	counter(c.gateWaits, s.ReaderWaits.Load(), "reader")
	for _, k := range []Kind{BlockStored, BlockRemoved, AllBlocksCleared} {
		counter(c.events, s.Events(k), k.String())
	}
	for _, r := range MalformedReasons() {
		counter(c.malformed, s.Malformed(r), r.String())
	}
	counter(c.gaps, s.Gaps.Load(), "detected")
	counter(c.gaps, s.GapsReplayed.Load(), "replayed")
	counter(c.gaps, s.GapsLost.Load(), "lost")
	counter(c.replays, s.ReplaysOK.Load(), "ok")
	counter(c.replays, s.ReplaysFailed.Load(), "failed")
	counter(c.replays, s.CatchUps.Load(), "catch_up_ok")
	counter(c.replays, s.CatchUpsFailed.Load(), "catch_up_failed")
	counter(c.restarts, s.Restarts.Load())
	counter(c.connects, s.Connects.Load())
	counter(c.disconnects, s.Disconnects.Load())
	counter(c.oversized, s.Oversized.Load())
	for _, ss := range s.Sources() {
		labels := []string{ss.Source.Model, strconv.FormatUint(ss.Source.WorkerID, 10), strconv.FormatUint(uint64(ss.Source.DPRank), 10)}
		if ss.HaveSeq.Load() {
			gauge(c.lastSeq, float64(ss.LastSeq.Load()), labels...)
		}
		gauge(c.lag, ss.Lag().Seconds(), labels...)
		connected := 0.0
		if ss.Connected.Load() {
			connected = 1
		}
		gauge(c.connected, connected, labels...)
		counter(c.sourceBatches, ss.Batches.Load(), labels...)
	}
}
