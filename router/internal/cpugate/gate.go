// Package cpugate bounds how many of the router's ingest goroutines use a
// CPU at once, so that during a burst a P stays free for what must
// answer at once: queries, the collector, the network poll.
//
// Go's scheduler has no priorities. When more goroutines are runnable
// than there are Ps, a query's goroutine waits in the run queue behind
// them, and with every P busy the runtime polls the network only from
// sysmon (about every 10 ms). A burst over many engines makes dozens of
// ingest goroutines runnable at once: each engine connection's reader
// (zmq4's, reading ahead) and each engine's decoder. A Gate holds a
// token for each goroutine doing ingest work; with fewer tokens than Ps,
// some P is left to the rest of the process.
//
// Decoders take a token for each batch (Acquire, Release). Connection
// readers hold one from a read that returned bytes until their next read
// (Reader): zmq4 parses what it read in between. A reader can block in
// between too, handing a message to its consumer when that one waits;
// if the consumer waits for a token in turn, or for a decoder that does,
// the gate would deadlock. So each consumer has a Link to the readers
// that feed it, and says when it waits (Link.Wait): its readers then
// give back their tokens and take none until it resumes.
package cpugate

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// Gate is a pool of tokens, one for each goroutine doing ingest work at
// once.
type Gate struct {
	tokens chan struct{}
}

// New returns a gate of n tokens (n >= 1).
func New(n int) (*Gate, error) {
	if n < 1 {
		return nil, fmt.Errorf("cpugate: %d tokens; want 1 or more", n)
	}
	return &Gate{tokens: make(chan struct{}, n)}, nil
}

// TryAcquire takes a token if one is free.
func (g *Gate) TryAcquire() bool {
	select {
	case g.tokens <- struct{}{}:
		return true
	default:
		return false
	}
}

// Acquire waits for a token; false if done is closed first.
func (g *Gate) Acquire(done <-chan struct{}) bool {
	select {
	case g.tokens <- struct{}{}:
		return true
	case <-done:
		return false
	}
}

// Release gives back a token taken by Acquire or TryAcquire.
func (g *Gate) Release() { <-g.tokens }

// Link is one consumer of messages and the connection readers that feed
// it.
type Link struct {
	gate    *Gate
	onWait  func() // a reader waits for a token (nil: nothing)
	waiting atomic.Bool

	mu      sync.Mutex
	readers map[*Reader]struct{}
}

// NewLink returns a link for one consumer of g's readers; onWait, if not
// nil, is called each time one of them has to wait for a token (a
// counter: it must not block).
func (g *Gate) NewLink(onWait func()) *Link {
	return &Link{gate: g, onWait: onWait, readers: map[*Reader]struct{}{}}
}

// Wait says the consumer is about to wait (for room in a queue, say):
// until resume is called, its readers give back their tokens and take
// none. Waiting on a nil Link does nothing.
func (l *Link) Wait() (resume func()) {
	if l == nil {
		return func() {}
	}
	l.waiting.Store(true)
	l.mu.Lock()
	for r := range l.readers {
		r.giveBack()
	}
	l.mu.Unlock()
	return func() { l.waiting.Store(false) }
}

// Reader reads a connection for a Link's consumer, holding a token of
// the gate from each read that returned bytes until the next read.
type Reader struct {
	r    io.Reader
	link *Link
	held atomic.Bool

	closed    chan struct{}
	closeOnce sync.Once
}

// NewReader returns r read through the gate: the reader of one
// connection feeding l's consumer. Close it with the connection.
func (l *Link) NewReader(r io.Reader) *Reader {
	gr := &Reader{r: r, link: l, closed: make(chan struct{})}
	l.mu.Lock()
	l.readers[gr] = struct{}{}
	l.mu.Unlock()
	return gr
}

// Read gives back the token held since the last read (a read may wait
// for the peer), reads, and takes a token for what follows if bytes
// came.
func (r *Reader) Read(p []byte) (int, error) {
	r.giveBack()
	n, err := r.r.Read(p)
	if n > 0 {
		r.take()
	}
	return n, err
}

// Close gives back a token held, ends a wait for one and unlinks the
// reader. The goroutine reading may still be in Read.
func (r *Reader) Close() {
	r.closeOnce.Do(func() {
		close(r.closed)
		r.link.mu.Lock()
		delete(r.link.readers, r)
		r.link.mu.Unlock()
		r.giveBack()
	})
}

// take waits for a token, unless the consumer waits (or the reader is
// closed).
func (r *Reader) take() {
	if r.link.waiting.Load() {
		return
	}
	if !r.link.gate.TryAcquire() {
		if r.link.onWait != nil {
			r.link.onWait()
		}
		if !r.link.gate.Acquire(r.closed) {
			return
		}
	}
	r.held.Store(true)
	// The consumer may have begun to wait, or the reader been closed,
	// since the check above: Wait and Close give back only the tokens they
	// see held. (The stores and loads are sequentially consistent: of this
	// store and Wait's, at least one side sees the other's.)
	select {
	case <-r.closed:
		r.giveBack()
		return
	default:
	}
	if r.link.waiting.Load() {
		r.giveBack()
	}
}

// giveBack gives back the token held, if any; safe from any goroutine.
func (r *Reader) giveBack() {
	if r.held.CompareAndSwap(true, false) {
		r.link.gate.Release()
	}
}

type linkKey struct{}

// WithLink returns ctx carrying l: zmq4 hands a socket's context to the
// transport that dials or accepts its connections, which reads it back
// with LinkFrom.
func WithLink(ctx context.Context, l *Link) context.Context {
	return context.WithValue(ctx, linkKey{}, l)
}

// LinkFrom returns the Link ctx carries, nil for none.
func LinkFrom(ctx context.Context) *Link {
	l, _ := ctx.Value(linkKey{}).(*Link)
	return l
}
