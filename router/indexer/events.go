package indexer

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kvhash/kvhash/core"
)

// ApplyEvent applies one Dynamo-JSON event (core.DecodeEvent) of a
// registered worker, for publishers that compute the local hashes
// themselves (POST /v1/events?worker_id=N). The rank is ev.DPRank. It goes
// through the same counters and guardrails as engine events (there is no
// stream to replay, so a quarantine asks for none); the error is core's
// (a stability violation in enforce mode, or a rejected event),
// ErrWarnedViolation (violations applied in warn mode) or ErrUnknownWorker.
func (x *Indexer) ApplyEvent(workerID uint64, ev core.Event) error {
	w, r := x.rankFor(workerID, ev.DPRank)
	if r == nil {
		return fmt.Errorf("%w: %d (register it first)", ErrUnknownWorker, workerID)
	}
	now := x.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gone {
		return fmt.Errorf("%w: %d rank %d was removed", ErrUnknownWorker, workerID, ev.DPRank)
	}
	r.lastEventAt = now
	a := applier{x: x, w: w, r: r, eventID: ev.ID}
	var err error
	switch ev.Kind {
	case core.EventStored:
		before := rankViolations(w.index, r.w)
		err = w.index.ApplyStored(r.w, ev.ID, ev.ParentHash, ev.Blocks)
		if !errors.Is(err, core.ErrEventRejected) {
			r.storesSince++
		}
		a.outcome(KindStored, err)
		err = withWarned(err, before, rankViolations(w.index, r.w), ev.ID)
	case core.EventRemoved:
		before := rankViolations(w.index, r.w)
		err = w.index.ApplyRemoved(r.w, ev.ID, ev.BlockHashes)
		a.outcome(KindRemoved, err)
		err = withWarned(err, before, rankViolations(w.index, r.w), ev.ID)
	case core.EventCleared:
		a.cleared()
	default:
		return fmt.Errorf("%w: event %d of worker %d has unknown kind %d", core.ErrInvalidArgument, ev.ID, workerID, ev.Kind)
	}
	x.settleLocked(r, now)
	return err
}

// ErrWarnedViolation: an event applied in warn mode had violations (a
// duplicate store, a reused name, a hash mismatch): counted, applied as
// the mode says, and reported to the HTTP publisher that sent it (core
// returns them as errors only in enforce mode).
var ErrWarnedViolation = errors.New("stability violation (warn mode: applied)")

// rankViolations is a rank's violation counts in an index.
func rankViolations(ix *core.Index, w core.Worker) [core.NumViolations]uint64 {
	for _, ws := range ix.Stats().Workers {
		if ws.Worker == w {
			return ws.Violations
		}
	}
	return [core.NumViolations]uint64{}
}

// withWarned is err, or when the event raised violations core did not
// return (warn mode), an error naming them.
func withWarned(err error, before, after [core.NumViolations]uint64, eventID uint64) error {
	if err != nil {
		return err
	}
	var kinds []string
	for v := range core.NumViolations {
		if after[v] > before[v] {
			kinds = append(kinds, core.Violation(v).String())
		}
	}
	if len(kinds) == 0 {
		return nil
	}
	return fmt.Errorf("%w: event %d: %s", ErrWarnedViolation, eventID, strings.Join(kinds, ", "))
}
