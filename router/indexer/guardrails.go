package indexer

import (
	"errors"
	"fmt"
	"slices"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/ingest"
)

// outcome counts an event's outcome from core's answer and applies the
// guardrails: in enforce mode a live rank with an enforced violation is
// quarantined; a quarantined rank's content violations restart its clock.
func (a *applier) outcome(kind EventKind, err error) {
	r := a.r
	switch {
	case err == nil:
		r.events[kind][OutcomeApplied]++
		return
	case errors.Is(err, core.ErrEventRejected):
		r.events[kind][OutcomeRejected]++
	default:
		r.events[kind][OutcomeViolation]++
	}
	var se *core.StabilityError
	if !errors.As(err, &se) || !se.Enforced {
		return
	}
	// A rank whose own ids are verified deterministic is not quarantined
	// for what a healthy engine's events also produce; the verifier checks
	// every root store it sends, so a restart with unstable ids is still
	// caught by its own verdict. Such violations stay counted; the copies
	// among them are logged at DEBUG (violationlog.go).
	if r.vs.verdict == VerdictVerified && onlyKinds(err, verifiedRankKinds...) {
		return
	}
	switch r.State() {
	case StateLive:
		a.quarantine(se, err)
	case StateQuarantined:
		if contentViolation(err) {
			r.cleanSince = a.x.now()
		}
	}
}

// verifiedRankKinds are the violations that never quarantine a verified
// rank:
//   - a hash mismatch says two ranks name one block differently, not which
//     is wrong: the node keeps the name of whoever stored it first (an
//     unstable rank that named it first is caught by its own verdict);
//   - a duplicate store, a parent not found and a block not found are what
//     vLLM's duplicate blocks make: it does not de-duplicate its prefix
//     cache (two requests computing one uncached prefix in the same step
//     each cache a copy, and each copy's store and eviction is an event),
//     so the second copy's store repeats a block, the first copy's
//     eviction removes the block the second still holds, a later store
//     under it names a parent the index dropped, and the second copy's
//     eviction removes a block the index no longer holds.
//
// Self references and reused names stay enforced: no cache produces them.
var verifiedRankKinds = []core.Violation{
	core.ViolationHashMismatch, core.ViolationDuplicateStore,
	core.ViolationParentNotFound, core.ViolationBlockNotFound,
}

// onlyKinds reports whether every stability error err holds is of one of
// kinds.
func onlyKinds(err error, kinds ...core.Violation) bool {
	for _, e := range stabilityErrors(err) {
		if !slices.Contains(kinds, e.Kind) {
			return false
		}
	}
	return true
}

// stabilityErrors lists the stability errors err holds, joined or not.
func stabilityErrors(err error) []*core.StabilityError {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	var out []*core.StabilityError
	for _, e := range errs {
		var se *core.StabilityError
		if errors.As(e, &se) {
			out = append(out, se)
		}
	}
	return out
}

// contentViolation reports whether err holds a violation that a clear
// and a partial rebuild cannot explain: a hash mismatch, a self
// reference, or a name reused for other content. (Parents and removed blocks not found are expected while a
// cleared rank rebuilds.)
func contentViolation(err error) bool {
	for _, se := range stabilityErrors(err) {
		if se.Kind == core.ViolationHashMismatch || se.Kind == core.ViolationSelfReference || se.Kind == core.ViolationNameReused {
			return true
		}
	}
	return false
}

const stabilityFix = "use one --block-size on every engine and the router, one PYTHONHASHSEED on every engine process, " +
	"and a deterministic hash (vLLM --prefix-caching-hash-algo sha256_cbor or sha256); see docs/guides/hash-stability.md"

// quarantine clears a rank whose hashes proved unstable and asks its
// engine to replay.
func (a *applier) quarantine(se *core.StabilityError, err error) {
	reason := fmt.Sprintf("unstable engine hashes: %s (event %d, hash %d)", se.Kind, se.EventID, se.Hash)
	a.quarantineFor(reason, stabilityFix, "error", err.Error())
}

// quarantineFor quarantines the rank for reason (a core violation or an
// unstable engine-hash verdict), logging the fix.
func (a *applier) quarantineFor(reason, fix string, attrs ...any) {
	r := a.r
	now := a.x.now()
	a.w.index.ClearWorker(r.w)
	r.forgetLocked()
	r.quarantines++
	r.setStateLocked(StateQuarantined, reason, now)
	attrs = append([]any{"worker_id", r.w.ID, "dp_rank", r.w.DPRank, "model", a.w.key.Model,
		"settle", a.x.opts.QuarantineSettle.String()}, attrs...)
	a.x.opts.Logger.Error("kvrouter: worker quarantined: "+reason+
		"; its blocks were cleared and it is scored by load only until its events apply cleanly",
		append(attrs, "fix", fix)...)
	if a.src != nil && a.x.opts.Replay != nil {
		src := *a.src
		a.replay = &src
	}
}

// enforcing reports whether stability problems quarantine.
func (x *Indexer) enforcing() bool { return x.opts.Mode == core.ModeEnforce }

// requestReplay asks the stream of a quarantined rank for everything its
// engine still buffers. Called without locks held.
func (x *Indexer) requestReplay(src ingest.Source, r core.Worker) {
	if err := x.opts.Replay.RequestReplay(src, 0); err != nil {
		x.opts.Logger.Warn("kvrouter: replay request for a quarantined worker failed",
			"worker_id", r.ID, "dp_rank", r.DPRank, "error", err.Error())
		return
	}
	x.opts.Logger.Info("kvrouter: replay requested for the quarantined worker",
		"worker_id", r.ID, "dp_rank", r.DPRank)
}
