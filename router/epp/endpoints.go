package epp

import (
	"net"
	"net/url"
	"sync"
	"time"

	"github.com/kvhash/kvhash/router/indexer"
)

// How fresh the address table is kept: rebuilt when older than
// endpointsMaxAge, and on a miss (a worker registered a moment ago) at
// most every endpointsMissEvery.
const (
	endpointsMaxAge    = time.Second
	endpointsMissEvery = 20 * time.Millisecond
)

// endpoints maps registered workers to the host:port of their base_url,
// the address a gateway sends to, and back.
type endpoints struct {
	ix  *indexer.Indexer
	now func() time.Time

	mu     sync.RWMutex
	byID   map[uint64]string
	byAddr map[string]uint64
	built  time.Time
}

func newEndpoints(ix *indexer.Indexer, now func() time.Time) *endpoints {
	return &endpoints{ix: ix, now: now}
}

// addr returns a worker's endpoint ("" when it has no usable base_url).
func (e *endpoints) addr(id uint64) string {
	e.fresh(false)
	e.mu.RLock()
	a, ok := e.byID[id]
	e.mu.RUnlock()
	if !ok && e.fresh(true) {
		e.mu.RLock()
		a = e.byID[id]
		e.mu.RUnlock()
	}
	return a
}

// worker returns the worker serving at addr.
func (e *endpoints) worker(addr string) (uint64, bool) {
	e.fresh(false)
	e.mu.RLock()
	id, ok := e.byAddr[addr]
	e.mu.RUnlock()
	if !ok && e.fresh(true) {
		e.mu.RLock()
		id, ok = e.byAddr[addr]
		e.mu.RUnlock()
	}
	return id, ok
}

// all returns every worker's endpoint (a copy).
func (e *endpoints) all() map[uint64]string {
	e.fresh(false)
	e.mu.RLock()
	defer e.mu.RUnlock()
	out := make(map[uint64]string, len(e.byID))
	for id, a := range e.byID {
		out[id] = a
	}
	return out
}

// fresh rebuilds the table when it is too old, or (miss) when a lookup
// failed and the last rebuild is not too recent. It reports a rebuild.
func (e *endpoints) fresh(miss bool) bool {
	now := e.now()
	e.mu.RLock()
	age := now.Sub(e.built)
	e.mu.RUnlock()
	if age < endpointsMaxAge && (!miss || age < endpointsMissEvery) {
		return false
	}
	byID, byAddr := map[uint64]string{}, map[string]uint64{}
	for _, w := range e.ix.Workers() {
		a, ok := hostPort(w.Spec.BaseURL)
		if !ok {
			continue
		}
		byID[w.Spec.WorkerID] = a
		byAddr[a] = w.Spec.WorkerID
	}
	e.mu.Lock()
	e.byID, e.byAddr, e.built = byID, byAddr, now
	e.mu.Unlock()
	return true
}

// hostPort is a base_url's host:port, the scheme's default port filled in.
func hostPort(baseURL string) (string, bool) {
	if baseURL == "" {
		return "", false
	}
	u, err := url.Parse(baseURL)
	if err != nil || u.Hostname() == "" {
		return "", false
	}
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		default:
			return "", false
		}
	}
	return net.JoinHostPort(u.Hostname(), port), true
}
