package indexer

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/kvhash/kvhash/core"
)

// The violation records a rank may log in a window; the rest are dropped
// and counted. core bounds one event's records (16 and a summary); this
// bounds a rank's rate, whatever the rate of its violating events: a
// peer's log costs at most this much, and its violations are all in the
// rank's stats and metrics regardless.
const (
	violationLogWindow = 10 * time.Second
	violationLogBurst  = 64
)

// violationLimiter is the slog.Handler in front of the core indexes'
// logger: it passes each rank's first violationLogBurst violation records
// of a window and drops the rest; the rank's first record of a later
// window is preceded by one saying how many were dropped. Records other
// than core's violation records pass untouched.
type violationLimiter struct {
	next  slog.Handler
	now   func() time.Time
	state *limiterState // shared with the handlers WithAttrs and WithGroup make
}

type limiterState struct {
	mu    sync.Mutex
	ranks map[core.Worker]*rankLogWindow
}

type rankLogWindow struct {
	start           time.Time
	logged, dropped uint64
}

func newViolationLimiter(next slog.Handler, now func() time.Time) *violationLimiter {
	return &violationLimiter{next: next, now: now, state: &limiterState{ranks: map[core.Worker]*rankLogWindow{}}}
}

func (h *violationLimiter) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *violationLimiter) WithAttrs(as []slog.Attr) slog.Handler {
	return &violationLimiter{next: h.next.WithAttrs(as), now: h.now, state: h.state}
}

func (h *violationLimiter) WithGroup(name string) slog.Handler {
	return &violationLimiter{next: h.next.WithGroup(name), now: h.now, state: h.state}
}

func (h *violationLimiter) Handle(ctx context.Context, rec slog.Record) error {
	if rec.Message != core.LogViolation && rec.Message != core.LogMoreViolations {
		return h.next.Handle(ctx, rec)
	}
	w := recordWorker(rec)
	now := h.now()
	s := h.state
	s.mu.Lock()
	win := s.ranks[w]
	if win == nil {
		win = &rankLogWindow{start: now}
		s.ranks[w] = win
	}
	var droppedBefore uint64
	if now.Sub(win.start) >= violationLogWindow {
		droppedBefore = win.dropped
		*win = rankLogWindow{start: now}
	}
	pass := win.logged < violationLogBurst
	if pass {
		win.logged++
	} else {
		win.dropped++
	}
	s.mu.Unlock()
	if droppedBefore > 0 {
		sum := slog.NewRecord(rec.Time, rec.Level, "kv index: violation records of this rank dropped in the last window (each violation is in its stats and metrics)", 0)
		sum.AddAttrs(slog.Uint64("worker_id", w.ID), slog.Uint64("dp_rank", uint64(w.DPRank)),
			slog.Uint64("dropped", droppedBefore), slog.Duration("window", violationLogWindow))
		if err := h.next.Handle(ctx, sum); err != nil {
			return err
		}
	}
	if !pass {
		return nil
	}
	return h.next.Handle(ctx, rec)
}

// recordWorker reads the rank a core violation record names.
func recordWorker(rec slog.Record) core.Worker {
	var w core.Worker
	rec.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "worker_id":
			w.ID = a.Value.Uint64()
		case "dp_rank":
			w.DPRank = uint32(a.Value.Uint64())
		}
		return true
	})
	return w
}
