package eventplane

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCollectorExportsTheReplicasCounters(t *testing.T) {
	nats := embedded(t)
	f := newFleet(t, nats.URL(), 1)
	a := f.start("a", false)
	f.waitSubscribed()
	f.engines[0].send(3)
	f.waitApplied(a)
	waitReady(t, a, true)
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(a.plane.Collector("kvrouter")))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, mf := range mfs {
		require.Len(t, mf.GetMetric(), 1, mf.GetName())
		m := mf.GetMetric()[0]
		require.Equal(t, "a", m.GetLabel()[0].GetValue(), "replica label")
		if m.Counter != nil {
			got[mf.GetName()] = m.GetCounter().GetValue()
		} else {
			got[mf.GetName()] = m.GetGauge().GetValue()
		}
	}
	assert.Len(t, got, len(counters)+5) // and the gauges: ready, applied_stream_seq, leases_held, stream_span_seconds, peers
	assert.Equal(t, 1.0, got["kvrouter_eventplane_leases_held"])
	assert.Equal(t, 1.0, got["kvrouter_eventplane_ready"])
	assert.GreaterOrEqual(t, got["kvrouter_eventplane_published_total"], 3.0)
	assert.GreaterOrEqual(t, got["kvrouter_eventplane_applied_total"], 3.0)
	assert.Equal(t, float64(a.plane.appliedSeq.Load()), got["kvrouter_eventplane_applied_stream_seq"])
}
