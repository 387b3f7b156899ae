package epp

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the picker's figures (kvrouter_epp_*).
type metrics struct {
	picks           prometheus.Counter
	immediates      *prometheus.CounterVec
	servedElsewhere prometheus.Counter
	pickSeconds     prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		picks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kvrouter_epp_picks_total", Help: "Requests the endpoint picker routed.",
		}),
		immediates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kvrouter_epp_immediate_responses_total",
			Help: "Requests the endpoint picker answered itself (503 no endpoint, 429 saturated, 4xx bad request), by status.",
		}, []string{"code"}),
		servedElsewhere: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kvrouter_epp_served_elsewhere_total",
			Help: "Requests the gateway reported served by another endpoint than the pick (a fallback, a policy that ignored it).",
		}),
		pickSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kvrouter_epp_pick_seconds",
			Help:    "Time from the request's body to the pick (tokenizing included).",
			Buckets: []float64{25e-6, 50e-6, 100e-6, 200e-6, 500e-6, 1e-3, 2e-3, 5e-3, 10e-3, 50e-3, 0.25, 1},
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.picks, m.immediates, m.servedElsewhere, m.pickSeconds} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) immediate(code int) { m.immediates.WithLabelValues(strconv.Itoa(code)).Inc() }
