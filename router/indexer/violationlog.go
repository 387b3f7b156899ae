package indexer

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/enginehash"
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

// LogVerifiedCopy is the message a verified rank's duplicate-copy
// violations are logged with instead of core.LogViolation, at DEBUG: a
// healthy vLLM makes them (verifiedCopyKinds), so they say nothing about
// its hashes. LogVerifiedCopies replaces core.LogMoreViolations for them.
const (
	LogVerifiedCopy   = "kv index: a verified engine's duplicate block copy (vLLM caches copies of one block; not a hash problem)"
	LogVerifiedCopies = "kv index: more duplicate block copies of a verified engine in this event"
)

// verifiedCopyKinds are the violations a verified rank's duplicate block
// copies make (see verifiedRankKinds): logged at DEBUG for such a rank.
// A hash mismatch is not one of them: it names another rank's problem,
// and stays a warning.
var verifiedCopyKinds = []string{
	core.ViolationDuplicateStore.String(), core.ViolationParentNotFound.String(), core.ViolationBlockNotFound.String(),
}

// violationLimiter is the slog.Handler in front of the core indexes'
// logger: it passes each rank's first violationLogBurst violation records
// of a window and drops the rest; the rank's first record of a later
// window is preceded by one saying how many were dropped. A verified
// rank's duplicate-copy records are logged at DEBUG instead, outside the
// limit (LogVerifiedCopy). Records other than core's violation records
// pass untouched.
type violationLimiter struct {
	next  slog.Handler
	now   func() time.Time
	state *limiterState // shared with the handlers WithAttrs and WithGroup make
}

type limiterState struct {
	mu    sync.Mutex
	ranks map[core.Worker]*rankLogWindow
	// verified: each registered rank's verified candidate (rank.verified,
	// nil while not verified). Its own map, under mu, because a record is
	// handled inside core's apply while the rank's mutex is held, and the
	// registry's lock is taken before a rank's: mu is a leaf.
	verified map[core.Worker]*atomic.Pointer[enginehash.Candidate]
}

type rankLogWindow struct {
	start           time.Time
	logged, dropped uint64
}

func newViolationLimiter(next slog.Handler, now func() time.Time) *violationLimiter {
	return &violationLimiter{next: next, now: now, state: &limiterState{
		ranks:    map[core.Worker]*rankLogWindow{},
		verified: map[core.Worker]*atomic.Pointer[enginehash.Candidate]{},
	}}
}

// track registers a rank's verified candidate under its worker rank.
func (h *violationLimiter) track(r *rank) {
	h.state.mu.Lock()
	h.state.verified[r.w] = &r.verified
	h.state.mu.Unlock()
}

// untrack drops a removed rank, unless another rank took its worker rank
// since (the worker was registered again).
func (h *violationLimiter) untrack(r *rank) {
	h.state.mu.Lock()
	if h.state.verified[r.w] == &r.verified {
		delete(h.state.verified, r.w)
	}
	h.state.mu.Unlock()
}

// verifiedCopy reports whether rec, a core violation record, is only
// what a verified rank's duplicate block copies make.
func (s *limiterState) verifiedCopy(w core.Worker, rec slog.Record) bool {
	s.mu.Lock()
	p := s.verified[w]
	s.mu.Unlock()
	if p == nil || p.Load() == nil {
		return false
	}
	copies := true
	rec.Attrs(func(a slog.Attr) bool {
		switch {
		case rec.Message == core.LogViolation && a.Key == "kind":
			copies = slices.Contains(verifiedCopyKinds, a.Value.String())
		case rec.Message == core.LogMoreViolations && a.Value.Kind() == slog.KindUint64 && isViolationKind(a.Key):
			// The summary's attributes are its counts by kind.
			copies = slices.Contains(verifiedCopyKinds, a.Key)
		}
		return copies
	})
	return copies
}

func isViolationKind(key string) bool {
	for k := range core.NumViolations {
		if core.Violation(k).String() == key {
			return true
		}
	}
	return false
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
	s := h.state
	if s.verifiedCopy(w, rec) {
		if !h.next.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		msg := LogVerifiedCopy
		if rec.Message == core.LogMoreViolations {
			msg = LogVerifiedCopies
		}
		copied := slog.NewRecord(rec.Time, slog.LevelDebug, msg, rec.PC)
		rec.Attrs(func(a slog.Attr) bool { copied.AddAttrs(a); return true })
		return h.next.Handle(ctx, copied)
	}
	now := h.now()
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
