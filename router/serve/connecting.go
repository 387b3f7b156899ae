package serve

import (
	"time"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/indexer"
)

// defaultConnectWarnAfter: a stream not connected this long is worth a
// WARN (a bad host, a port that is not ZeroMQ, a path nobody binds).
const defaultConnectWarnAfter = 30 * time.Second

// connectWatch remembers which connecting ranks were warned about, so
// each is logged once a registration.
type connectWatch struct {
	after  time.Duration
	now    func() time.Time
	warned map[core.Worker]bool // only the expiry loop touches it
}

func newConnectWatch(after time.Duration, now func() time.Time) *connectWatch {
	if after <= 0 {
		after = defaultConnectWarnAfter
	}
	if now == nil {
		now = time.Now
	}
	return &connectWatch{after: after, now: now, warned: map[core.Worker]bool{}}
}

// warnUnconnected logs, once each, the ranks still connecting after the
// watch's time: until they connect they show as connecting on
// /v1/workers and the dashboard and are scored by load only.
func (s *Server) warnUnconnected() {
	cw := s.connecting
	now := cw.now()
	seen := map[core.Worker]bool{}
	for _, info := range s.ix.Workers() {
		for _, ri := range info.Ranks {
			if ri.State != indexer.StateConnecting {
				continue
			}
			seen[ri.Worker] = true
			if cw.warned[ri.Worker] || now.Sub(ri.Since) < cw.after {
				continue
			}
			cw.warned[ri.Worker] = true
			s.log.Warn("kvrouter: a worker's KV event stream has not connected; it is scored by load only until it does",
				"worker_id", ri.Worker.ID, "dp_rank", ri.Worker.DPRank, "endpoint", info.Spec.Endpoint,
				"waited", now.Sub(ri.Since).Round(time.Second).String(),
				"fix", "check the endpoint: the engine's host and port, that it is the engine's ZeroMQ KV events socket, and a firewall")
		}
	}
	for w := range cw.warned {
		if !seen[w] {
			delete(cw.warned, w) // connected, or removed: warn again next time
		}
	}
}
