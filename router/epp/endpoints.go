package epp

import (
	"net"
	"net/url"
	"sync"
	"sync/atomic"
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
// the address a gateway sends to, and back. Each rebuild is a new
// immutable table, read without locks.
type endpoints struct {
	ix      *indexer.Indexer
	now     func() time.Time
	cur     atomic.Pointer[addrTable]
	rebuild sync.Mutex
}

type addrTable struct {
	byID   map[uint64]string
	byAddr map[string]uint64
	built  time.Time
}

func newEndpoints(ix *indexer.Indexer, now func() time.Time) *endpoints {
	e := &endpoints{ix: ix, now: now}
	e.cur.Store(&addrTable{})
	return e
}

// table returns the current table, rebuilt first when too old.
func (e *endpoints) table() *addrTable {
	t := e.cur.Load()
	if e.now().Sub(t.built) < endpointsMaxAge {
		return t
	}
	return e.refresh(endpointsMaxAge)
}

// afterMiss returns a table rebuilt unless the current one is very fresh:
// a lookup missed, maybe a worker registered a moment ago.
func (e *endpoints) afterMiss() *addrTable { return e.refresh(endpointsMissEvery) }

func (e *endpoints) refresh(olderThan time.Duration) *addrTable {
	e.rebuild.Lock()
	defer e.rebuild.Unlock()
	now := e.now()
	if t := e.cur.Load(); now.Sub(t.built) < olderThan {
		return t // rebuilt by another caller meanwhile
	}
	t := &addrTable{byID: map[uint64]string{}, byAddr: map[string]uint64{}, built: now}
	for _, w := range e.ix.Workers() {
		a, ok := hostPort(w.Spec.BaseURL)
		if !ok {
			continue
		}
		t.byID[w.Spec.WorkerID] = a
		t.byAddr[a] = w.Spec.WorkerID
	}
	e.cur.Store(t)
	return t
}

// addr returns a worker's endpoint ("" when it has no usable base_url).
func (e *endpoints) addr(id uint64) string {
	if a, ok := e.table().byID[id]; ok {
		return a
	}
	return e.afterMiss().byID[id]
}

// worker returns the worker serving at addr.
func (e *endpoints) worker(addr string) (uint64, bool) {
	if id, ok := e.table().byAddr[addr]; ok {
		return id, true
	}
	id, ok := e.afterMiss().byAddr[addr]
	return id, ok
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
