package proxy

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// collector exposes the proxy's figures to Prometheus, read from Stats at
// scrape time (never counted twice, never drifting from /v1/dashboard).
type collector struct {
	p                                        *Proxy
	requests, failed, prompt, cached, flight *prometheus.Desc
	rejected, waiting, held                  *prometheus.Desc
}

// Collector returns a Prometheus collector over the proxy's figures.
func (p *Proxy) Collector() prometheus.Collector {
	pol := []string{"policy"}
	return &collector{
		p:        p,
		requests: prometheus.NewDesc("kvrouter_proxy_requests_total", "Requests the proxy routed, by policy.", pol, nil),
		failed:   prometheus.NewDesc("kvrouter_proxy_failed_total", "Proxied requests that failed (engine unreachable, timed out, an error answer, a client gone), by policy.", pol, nil),
		prompt:   prometheus.NewDesc("kvrouter_proxy_prompt_tokens_total", "Prompt tokens of answered requests that reported usage, by policy.", pol, nil),
		cached:   prometheus.NewDesc("kvrouter_proxy_cached_prompt_tokens_total", "Of those, the tokens engines found in their prefix cache, by policy.", pol, nil),
		flight:   prometheus.NewDesc("kvrouter_proxy_in_flight", "Requests in flight through the proxy, by worker.", []string{"worker_id"}, nil),
		rejected: prometheus.NewDesc("kvrouter_proxy_rejected_total", "Requests answered 429 because every engine of their model was at its limit, by policy.", pol, nil),
		held:     prometheus.NewDesc("kvrouter_proxy_held_total", "Requests held in the proxy before routing while every engine of their model had a step's prefill queued (policy kvrouter), by policy.", pol, nil),
		waiting:  prometheus.NewDesc("kvrouter_proxy_admission_waiting", "Requests waiting in the proxy: held before routing while every engine has a step's prefill queued (policy kvrouter), or for an engine's slot.", nil, nil),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.requests, c.failed, c.prompt, c.cached, c.flight, c.rejected, c.held, c.waiting} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for _, ps := range c.p.stats.Snapshot().Policies {
		l := string(ps.Policy)
		ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, float64(ps.Requests), l)
		ch <- prometheus.MustNewConstMetric(c.failed, prometheus.CounterValue, float64(ps.Failed+ps.RouteFailed), l)
		ch <- prometheus.MustNewConstMetric(c.prompt, prometheus.CounterValue, float64(ps.PromptTokens), l)
		ch <- prometheus.MustNewConstMetric(c.cached, prometheus.CounterValue, float64(ps.CachedTokens), l)
		ch <- prometheus.MustNewConstMetric(c.rejected, prometheus.CounterValue, float64(ps.Rejected), l)
		ch <- prometheus.MustNewConstMetric(c.held, prometheus.CounterValue, float64(ps.Held), l)
	}
	ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(c.p.Waiting()+c.p.Held()))
	for id, n := range c.p.Inflight() {
		ch <- prometheus.MustNewConstMetric(c.flight, prometheus.GaugeValue, float64(n), strconv.FormatUint(id, 10))
	}
}
