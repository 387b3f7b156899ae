package serve

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvhash/kvhash/router/indexer"
)

// caps are the server's side of the bounds on what clients and
// publishers can make the router keep (issue 24; the indexer's side is
// router/indexer's caps.go): labels refused over HTTP, topics refused on
// the bound endpoint, and the indexer's refused events, as metrics.
type caps struct {
	rejectedLabels *prometheus.CounterVec
	bindRefused    *prometheus.CounterVec
	// nextBindLog limits the refused-topic warnings (unix nanos).
	nextBindLog atomic.Int64
}

var descRefused = prometheus.NewDesc("kvrouter_refused_events_total",
	"Engine or HTTP events refused by the router's bounds, by reason (dp_rank_out_of_range, rank_full, invalid_label).",
	[]string{"reason"}, nil)

// refusedCollector reads the indexer's refusal counters at scrape time.
type refusedCollector struct{ ix *indexer.Indexer }

func (c refusedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descRefused }

func (c refusedCollector) Collect(ch chan<- prometheus.Metric) {
	for reason, n := range c.ix.Refused() {
		ch <- prometheus.MustNewConstMetric(descRefused, prometheus.CounterValue, float64(n), indexer.Refusal(reason).String())
	}
}

func newCaps(reg *prometheus.Registry, ix *indexer.Indexer) *caps {
	c := &caps{
		rejectedLabels: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kvrouter_rejected_labels_total",
			Help: "HTTP requests refused (400) for a label too long or not UTF-8, by field (model, tenant, topic).",
		}, []string{"field"}),
		bindRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kvrouter_bind_refused_messages_total",
			Help: "Messages on the bound endpoint whose topic may not register a worker, by reason (not_allowed, max_workers, invalid_label).",
		}, []string{"reason"}),
	}
	reg.MustRegister(c.rejectedLabels, c.bindRefused, refusedCollector{ix: ix})
	return c
}

// label is one label of a request: its field name and value.
type label struct{ field, value string }

// checkLabels refuses a request whose labels are not bounded labels
// (indexer.CheckLabel: model and tenant at most 256 bytes, topic 512,
// UTF-8), counting it by field.
func (s *Server) checkLabels(labels ...label) error {
	for _, l := range labels {
		limit := indexer.MaxLabelBytes
		if l.field == "topic" {
			limit = indexer.MaxTopicBytes
		}
		if err := indexer.CheckLabel(l.field, l.value, limit); err != nil {
			s.caps.rejectedLabels.WithLabelValues(l.field).Inc()
			return badRequest("invalid_label", "%v", err)
		}
	}
	return nil
}

// eventsError maps the indexer's refusals of HTTP events onto 400s.
func eventsError(err error) error {
	switch {
	case errors.Is(err, indexer.ErrRankOutOfRange):
		return badRequest("dp_rank_out_of_range", "%v", err)
	case errors.Is(err, indexer.ErrRankFull):
		return badRequest("rank_full", "%v", err)
	case errors.Is(err, indexer.ErrUnknownWorker):
		return notFound("unknown_worker", "%v", err)
	}
	return err
}

// bindLogEvery: refused topics are logged at most this often.
const bindLogEvery = 10 * time.Second

// logBindRefusal reports whether a refused topic may be logged now.
func (c *caps) logBindRefusal(now time.Time) bool {
	last := c.nextBindLog.Load()
	return now.UnixNano() >= last && c.nextBindLog.CompareAndSwap(last, now.Add(bindLogEvery).UnixNano())
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
