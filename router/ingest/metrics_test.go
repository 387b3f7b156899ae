package ingest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCollectorExportsTheStats(t *testing.T) {
	var s Stats
	s.Messages.Add(5)
	s.events[BlockStored].Add(3)
	s.countMalformed(ReasonTokenRange)
	s.GapsLost.Add(2)
	s.Oversized.Add(4)
	s.WorkerWaits.Add(6)
	s.ReaderWaits.Add(9)
	ss := s.addSource(Source{Model: "llama", WorkerID: 7, DPRank: 1})
	ss.LastSeq.Store(41)
	ss.HaveSeq.Store(true)
	ss.Connected.Store(true)

	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(NewCollector("kvrouter", &s)))
	families, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	series := map[string]int{}
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			for _, l := range m.GetLabel() {
				key += "," + l.GetName() + "=" + l.GetValue()
			}
			series[mf.GetName()]++
			switch {
			case m.GetCounter() != nil:
				got[key] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				got[key] = m.GetGauge().GetValue()
			}
		}
	}
	for key, want := range map[string]float64{
		"kvrouter_ingest_messages_total":                              5,
		"kvrouter_ingest_events_total,kind=BlockStored":               3,
		"kvrouter_ingest_malformed_total,reason=token_range":          1,
		"kvrouter_ingest_malformed_total,reason=frames":               0,
		"kvrouter_ingest_gaps_total,outcome=lost":                     2,
		"kvrouter_ingest_oversized_messages_total":                    4,
		"kvrouter_ingest_gate_waits_total,waiter=decoder":             6,
		"kvrouter_ingest_gate_waits_total,waiter=reader":              9,
		"kvrouter_ingest_last_seq,dp_rank=1,model=llama,worker_id=7":  41,
		"kvrouter_ingest_connected,dp_rank=1,model=llama,worker_id=7": 1,
	} {
		v, ok := got[key]
		if assert.True(t, ok, "no series %s", key) {
			assert.InDelta(t, want, v, 0, key)
		}
	}
	assert.Equal(t, int(numReasons), series["kvrouter_ingest_malformed_total"], "one series per reason, zeros included")
}
