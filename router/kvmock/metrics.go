package kvmock

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics exposes the engine's state under vLLM's (V1) Prometheus names,
// so that routers which score engines by scraping /metrics (queue depth,
// KV cache utilisation, prefix-cache hit rate; llm-d does) see kvmock as
// they see vLLM. Labels are vLLM's: model_name and engine ("0", one engine
// core per process). Counters and gauges are read from one snapshot of the
// engine per scrape; time to first token is observed per request. The
// prefix cache counters count tokens at every scheduling of a request (a
// preempted one is queried again), as vLLM's do.
type metrics struct {
	engine *Engine
	labels prometheus.Labels
	ttft   prometheus.Histogram

	running, waiting, kvUsage                                        *prometheus.Desc
	queries, hits, promptTokens, generationTokens, done, preemptions *prometheus.Desc
}

func newMetrics(e *Engine) *metrics {
	labels := prometheus.Labels{"model_name": e.Config().Model, "engine": "0"}
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, nil, labels)
	}
	return &metrics{
		engine: e,
		labels: labels,
		ttft: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:        "vllm:time_to_first_token_seconds",
			Help:        "Histogram of simulated time to first token in seconds.",
			ConstLabels: labels,
			Buckets:     []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560},
		}),
		running:          desc("vllm:num_requests_running", "Number of requests in model execution batches."),
		waiting:          desc("vllm:num_requests_waiting", "Number of requests waiting to be processed."),
		kvUsage:          desc("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."),
		queries:          desc("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens."),
		hits:             desc("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens."),
		promptTokens:     desc("vllm:prompt_tokens_total", "Number of prefill tokens processed."),
		generationTokens: desc("vllm:generation_tokens_total", "Number of generation tokens processed."),
		done:             desc("vllm:request_success_total", "Count of successfully processed requests."),
		preemptions:      desc("vllm:num_preemptions_total", "Cumulative number of preemptions from the engine."),
	}
}

func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.running, m.waiting, m.kvUsage, m.queries, m.hits, m.promptTokens, m.generationTokens, m.done, m.preemptions} {
		ch <- d
	}
	m.ttft.Describe(ch)
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	st := m.engine.State()
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	gauge(m.running, float64(st.Running))
	gauge(m.waiting, float64(st.Waiting))
	gauge(m.kvUsage, float64(st.Cache.UsedBlocks)/float64(st.Cache.NumBlocks))
	counter(m.queries, st.Stats.PrefixQueries)
	counter(m.hits, st.Stats.PrefixHits)
	counter(m.promptTokens, st.Stats.PromptTokens)
	counter(m.generationTokens, st.Stats.GeneratedTokens)
	counter(m.done, st.Stats.Finished)
	counter(m.preemptions, st.Stats.Preemptions)
	m.ttft.Collect(ch)
}

// handler serves the metrics from a registry of their own (never the
// global one: several engines may run in one test process).
func (m *metrics) handler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
