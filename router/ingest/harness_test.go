package ingest

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// recorder is a Handler that keeps everything it hears, in order.
type recorder struct {
	mu      sync.Mutex
	batches []recorded
	streams []recordedStream
	changed chan struct{}
}

type recorded struct {
	src Source
	b   *Batch
}

type recordedStream struct {
	src Source
	ev  StreamEvent
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{}, 1)} }

func (r *recorder) HandleBatch(src Source, b *Batch) {
	r.mu.Lock()
	r.batches = append(r.batches, recorded{src, b})
	r.mu.Unlock()
	r.notify()
}

func (r *recorder) HandleStream(src Source, ev StreamEvent) {
	r.mu.Lock()
	r.streams = append(r.streams, recordedStream{src, ev})
	r.mu.Unlock()
	r.notify()
}

func (r *recorder) notify() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// waitFor polls cond (under the recorder's lock) until it holds.
func (r *recorder) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		r.mu.Lock()
		ok := cond()
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.changed:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			r.mu.Lock()
			defer r.mu.Unlock()
			t.Fatalf("timed out waiting for %s; batches %v; stream events %v", what, r.seqsLocked(), r.kindsLocked())
		}
	}
}

// seqsLocked lists the delivered seqs.
func (r *recorder) seqsLocked() []uint64 {
	out := []uint64{}
	for _, b := range r.batches {
		out = append(out, b.b.Seq)
	}
	return out
}

func (r *recorder) seqs() []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seqsLocked()
}

func (r *recorder) kindsLocked() []string {
	out := []string{}
	for _, s := range r.streams {
		out = append(out, fmt.Sprintf("%s[%d,%d)", s.ev.Kind, s.ev.From, s.ev.To))
	}
	return out
}

func (r *recorder) streamEvents(kind StreamEventKind) []StreamEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []StreamEvent
	for _, s := range r.streams {
		if s.ev.Kind == kind {
			out = append(out, s.ev)
		}
	}
	return out
}

func (r *recorder) countLocked(kind StreamEventKind) int {
	n := 0
	for _, s := range r.streams {
		if s.ev.Kind == kind {
			n++
		}
	}
	return n
}
