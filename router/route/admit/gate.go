package admit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Errors of Gate.Enter, wrapped with context.
var (
	// ErrFull: MaxHeld requests are already held.
	ErrFull = errors.New("admission queue full")
	// ErrTimeout: the request was held longer than MaxWait.
	ErrTimeout = errors.New("held past the admission queue's longest wait")
)

// GateOptions configure a Gate.
type GateOptions struct {
	// MaxHeld: requests held at once; one more is refused (ErrFull).
	MaxHeld int
	// MaxWait: how long a request may be held before it is refused
	// (ErrTimeout); 0: only its context ends it.
	MaxWait time.Duration
	// Recheck: how often held requests ask again whether the fleet has
	// room, besides Kick (a safety net for load that ends without a
	// report, e.g. expiry); 0: 50 ms.
	Recheck time.Duration
	// Now is the clock (tests); nil: time.Now.
	Now func() time.Time
}

// Gate is a Queue for concurrent callers: Enter returns at once while the
// fleet has room and nobody is held, and otherwise holds the caller until
// it is the highest-ratio request when the fleet has room. One released
// request routes at a time (until its done is called), so a release
// never sends more than the room there is.
type Gate struct {
	opts      GateOptions
	saturated func() bool
	mu        sync.Mutex
	q         Queue[*waiter]
	releasing bool // a released request has not routed yet
	// busy mirrors q.Len() > 0 || releasing, for Kick's check without the
	// lock (Kick is called at every first token and end).
	busy atomic.Bool
}

type waiter struct {
	ready    chan struct{}
	released bool
}

// NewGate returns a Gate whose fleet is full while saturated reports true
// (route.Router's Saturated for one model, with the caller's eligible
// ranks and hold threshold).
func NewGate(saturated func() bool, opts GateOptions) *Gate {
	if opts.Recheck <= 0 {
		opts.Recheck = 50 * time.Millisecond
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Gate{opts: opts, saturated: saturated}
}

// Held is the number of requests held now.
func (g *Gate) Held() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.q.Len()
}

// Enter admits a request whose own prefill is predicted to take
// serviceS() seconds (asked only when the request is held). It returns
// done, to call once the request is routed (or given up), and whether it
// was held; an error when it is refused (ErrFull, ErrTimeout or ctx's
// error), and then done is nil.
func (g *Gate) Enter(ctx context.Context, serviceS func() float64) (done func(), held bool, err error) {
	g.mu.Lock()
	if g.q.Len() == 0 && !g.releasing && !g.saturated() {
		g.mu.Unlock()
		return func() {}, false, nil
	}
	g.mu.Unlock()
	// Held: its place in the queue is computed outside the lock (it
	// hashes the prompt), and the room is checked again after.
	at, s := g.opts.Now(), serviceS()
	g.mu.Lock()
	if g.opts.MaxHeld > 0 && g.q.Len() >= g.opts.MaxHeld {
		n := g.q.Len()
		g.mu.Unlock()
		return nil, false, fmt.Errorf("%w: %d held", ErrFull, n)
	}
	w := &waiter{ready: make(chan struct{})}
	g.q.Push(w, at, s)
	g.busy.Store(true)
	g.mu.Unlock()
	g.Kick()

	var deadline <-chan time.Time
	if g.opts.MaxWait > 0 {
		t := time.NewTimer(g.opts.MaxWait)
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(g.opts.Recheck)
	defer tick.Stop()
	for {
		select {
		case <-w.ready:
			return g.routed, true, nil
		case <-tick.C:
			g.Kick()
			continue
		case <-deadline:
			err = fmt.Errorf("%w (%v)", ErrTimeout, g.opts.MaxWait)
		case <-ctx.Done():
			err = ctx.Err()
		}
		if !g.leave(w) {
			g.routed() // released as it gave up: its turn goes to the next
		}
		return nil, true, err
	}
}

// leave takes w out of the queue; false when it was released already.
func (g *Gate) leave(w *waiter) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if w.released {
		return false
	}
	g.q.Remove(func(x *waiter) bool { return x == w })
	g.busy.Store(g.q.Len() > 0 || g.releasing)
	return true
}

// routed ends a released request's turn and lets the next one go if
// there is room.
func (g *Gate) routed() {
	g.mu.Lock()
	g.releasing = false
	g.busy.Store(g.q.Len() > 0)
	g.mu.Unlock()
	g.Kick()
}

// Kick releases the highest-ratio held request if the fleet has room and
// no released request is still routing. Call it when load ends (a first
// token, a request's end).
func (g *Gate) Kick() {
	if !g.busy.Load() {
		return // nobody held: nothing to release, no lock taken
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.releasing || g.q.Len() == 0 || g.saturated() {
		return
	}
	w, _ := g.q.Pop(g.opts.Now())
	w.released = true
	g.releasing = true
	close(w.ready)
}
