package proxy

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/kvhash/kvhash/router/internal/httpapi"
)

// Backpressure: each engine takes at most EngineSlots requests from the
// proxy at once (what it runs, max_num_seqs, plus what it may queue); a
// request whose model has no engine with a free slot waits in the
// proxy's admission queue, first come first served, until a slot frees
// or its deadline passes; then, or when the queue is full, it is a 429
// with Retry-After. Waiting is outside the routing decision: a route is
// taken only when an engine can take the request, so its latency does
// not grow with the load, and the descriptors the proxy holds stay
// bounded (a pool of EngineSlots connections an engine).

// Defaults of the backpressure options.
const (
	DefaultMaxNumSeqs   = 256 // vLLM's default max_num_seqs
	DefaultEngineQueue  = 256
	DefaultQueueLimit   = 1024
	DefaultQueueTimeout = 5 * time.Second
)

// ErrSaturated: every engine the request could go to is at its slots
// (Admit's error wraps it; router/epp's ErrSaturated is this error).
var ErrSaturated = errors.New("every engine is at its limit")

// errSaturated: the proxy's own name for it.
var errSaturated = ErrSaturated

// admission is the queue of requests waiting for an engine's slot, one
// FIFO a model (a slot freed on an engine of model m can serve only a
// request for m).
type admission struct {
	mu      sync.Mutex
	queues  map[string][]*waiter
	waiting int
}

type waiter struct {
	ch chan struct{} // gets one value when a slot may be free
}

// enqueue puts a waiter at the back (or the front: a waiter woken that
// lost its slot to a race keeps its turn) of its model's queue; false
// when the queue is full.
func (a *admission) enqueue(model string, w *waiter, front bool, limit int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.waiting >= limit {
		return false
	}
	a.waiting++
	if front {
		a.queues[model] = append([]*waiter{w}, a.queues[model]...)
	} else {
		a.queues[model] = append(a.queues[model], w)
	}
	return true
}

// remove takes w out of its queue; false when it was woken (and so is
// no longer queued).
func (a *admission) remove(model string, w *waiter) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	q := a.queues[model]
	for i, o := range q {
		if o == w {
			a.queues[model] = append(q[:i:i], q[i+1:]...)
			a.waiting--
			return true
		}
	}
	return false
}

// wakeOne wakes the first waiter for model, if any.
func (a *admission) wakeOne(model string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	q := a.queues[model]
	if len(q) == 0 {
		return
	}
	w := q[0]
	q[0] = nil
	if len(q) == 1 {
		delete(a.queues, model)
	} else {
		a.queues[model] = q[1:]
	}
	a.waiting--
	w.ch <- struct{}{}
}

// queued reports whether requests for model wait (a new one goes behind
// them rather than taking a slot first).
func (a *admission) queued(model string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.queues[model]) > 0
}

// Waiting is the number of requests in the admission queue.
func (p *Proxy) Waiting() int {
	p.adm.mu.Lock()
	defer p.adm.mu.Unlock()
	return p.adm.waiting
}

// admit picks the request's engine once one has a free slot, waiting in
// the admission queue (at most QueueTimeout) when none has. It returns
// the route's own duration (the last pick's) and the time queued.
func (p *Proxy) admit(ctx context.Context, w http.ResponseWriter, pol Policy, req clientRequest, tokens []uint32) (target, time.Duration, time.Duration, error) {
	start := time.Now()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	wt := &waiter{ch: make(chan struct{}, 1)}
	woken := false
	for {
		if woken || !p.adm.queued(req.Model) {
			t0 := time.Now()
			t, err := p.pick(pol, req, tokens)
			routeDur := time.Since(t0)
			if err == nil {
				return t, routeDur, t0.Sub(start), nil
			}
			if !errors.Is(err, errSaturated) {
				if woken {
					p.adm.wakeOne(req.Model) // the slot is someone else's
				}
				return target{}, routeDur, 0, err
			}
		}
		if !p.adm.enqueue(req.Model, wt, woken, p.opts.QueueLimit) {
			p.stats.rejected(pol)
			return target{}, 0, 0, p.saturated(w, req.Model, "the admission queue is full (%d requests wait)", p.opts.QueueLimit)
		}
		if timer == nil {
			timer = time.NewTimer(p.opts.QueueTimeout)
		}
		select {
		case <-wt.ch:
			woken = true
		case <-timer.C:
			if !p.adm.remove(req.Model, wt) {
				p.adm.wakeOne(req.Model) // woken meanwhile: pass the slot on
			}
			p.stats.rejected(pol)
			return target{}, 0, 0, p.saturated(w, req.Model, "no engine had a free slot within %v", p.opts.QueueTimeout)
		case <-ctx.Done():
			if !p.adm.remove(req.Model, wt) {
				p.adm.wakeOne(req.Model)
			}
			return target{}, 0, 0, ctx.Err()
		}
	}
}

// saturated is the 429 a request gets when its model's engines are all
// at their limit, with Retry-After.
func (p *Proxy) saturated(w http.ResponseWriter, model, format string, args ...any) error {
	w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
	e := httpapi.TooManyRequests("engines_saturated", format, args...)
	e.Message = "model " + strconv.Quote(model) + ": every engine is at its limit (max_num_seqs + engine_queue): " + e.Message + "; retry later"
	return e
}

// retryAfterSeconds: a second is many requests' time on an engine.
const retryAfterSeconds = 1
