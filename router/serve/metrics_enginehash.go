package serve

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvhash/kvhash/router/indexer"
)

var (
	descVerdict = rankDesc("kvrouter_engine_hash_verdict",
		"1 for the rank's engine-hash verdict (pending, verified, unverifiable, unstable), with the verified scheme and seed.",
		"verdict", "scheme", "seed")
	descVerifyMismatches = rankDesc("kvrouter_engine_hash_mismatches_total",
		"Root stores whose block id no known deterministic scheme and seed reproduces (a random root per engine process).")
	descDisagree = prometheus.NewDesc("kvrouter_engine_hash_disagreement",
		"1 when workers of one model are verified under different engine hash schemes or seeds (KV transfer between them misses).",
		[]string{"model", "tenant"}, nil)
)

// engineHashDescs are described by the fleet collector.
var engineHashDescs = []*prometheus.Desc{descVerdict, descVerifyMismatches, descDisagree}

// collectEngineHash writes a rank's verdict series.
func collectEngineHash(ch chan<- prometheus.Metric, lv []string, e indexer.EngineHashInfo) {
	labels := append(append(make([]string, 0, len(lv)+3), lv...), e.Verdict.String(), string(e.Scheme), e.Seed)
	ch <- prometheus.MustNewConstMetric(descVerdict, prometheus.GaugeValue, 1, labels...)
	ch <- prometheus.MustNewConstMetric(descVerifyMismatches, prometheus.CounterValue, float64(e.Mismatches), lv...)
}

// collectAgreement writes one series per model with a verified worker.
func collectAgreement(ch chan<- prometheus.Metric, as []indexer.HashAgreement) {
	for _, a := range as {
		v := 0.0
		if !a.Agrees() {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(descDisagree, prometheus.GaugeValue, v, a.Key.Model, a.Key.Tenant)
	}
}
