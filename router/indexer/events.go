package indexer

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kvhash/kvhash/core"
)

// ApplyEvent applies one Dynamo-JSON event (core.DecodeEvent) of a
// registered worker, for publishers that compute the local hashes
// themselves (POST /v1/events?worker_id=N). The rank is ev.DPRank, one
// the worker has (below its dp_size, or created before). It goes
// through the same counters and guardrails as engine events (there is no
// stream to replay, so a quarantine asks for none); the error is core's
// (a stability violation in enforce mode, or a rejected event),
// ErrWarnedViolation (violations applied in warn mode), ErrUnknownWorker,
// ErrRankOutOfRange or ErrRankFull (nothing applied). CheckEvents tells
// the last two before.
func (x *Indexer) ApplyEvent(workerID uint64, ev core.Event) error {
	w, r, err := x.eventRank(workerID, ev.DPRank, false)
	if err != nil {
		x.refuse(RefusedRankRange, 1, "an HTTP event named a dp_rank its worker does not have", "worker_id", workerID, "error", err)
		return err
	}
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
	switch ev.Kind {
	case core.EventStored:
		if !a.roomLocked(len(ev.Blocks)) {
			r.skipped[SkipRankFull] += uint64(len(ev.Blocks))
			r.events[KindStored][OutcomeSkipped]++
			a.refuseFull(len(ev.Blocks))
			return fmt.Errorf("%w: worker %d dp_rank %d holds %d blocks; storing %d more would pass max_rank_blocks %d",
				ErrRankFull, workerID, ev.DPRank, r.held, len(ev.Blocks), x.opts.MaxRankBlocks)
		}
		before := w.index.WorkerViolations(r.w)
		err = w.index.ApplyStored(r.w, ev.ID, ev.ParentHash, ev.Blocks)
		if !errors.Is(err, core.ErrEventRejected) {
			r.storesSince++
		}
		a.outcome(KindStored, err)
		err = withWarned(err, before, w.index.WorkerViolations(r.w), ev.ID)
	case core.EventRemoved:
		before := w.index.WorkerViolations(r.w)
		err = w.index.ApplyRemoved(r.w, ev.ID, ev.BlockHashes)
		a.outcome(KindRemoved, err)
		err = withWarned(err, before, w.index.WorkerViolations(r.w), ev.ID)
	case core.EventCleared:
		a.cleared()
	default:
		return fmt.Errorf("%w: event %d of worker %d has unknown kind %d", core.ErrInvalidArgument, ev.ID, workerID, ev.Kind)
	}
	x.settleLocked(r, now)
	return err
}

// CheckEvents reports, before any of them is applied, whether ApplyEvent
// would refuse some of a worker's events for the bounds: a dp_rank the
// worker does not have (ErrRankOutOfRange), or stores that would take a
// rank beyond MaxRankBlocks (ErrRankFull; removals in the same events are
// not credited). The refused events are counted (Refused). A publisher
// racing the same ranks may still see ApplyEvent refuse one.
func (x *Indexer) CheckEvents(workerID uint64, evs []core.Event) error {
	x.mu.RLock()
	w, ok := x.workers[workerID]
	if !ok {
		x.mu.RUnlock()
		return fmt.Errorf("%w: %d (register it first)", ErrUnknownWorker, workerID)
	}
	stores := map[uint32]uint64{}
	var rangeErr error
	for _, ev := range evs {
		if _, have := w.ranks[ev.DPRank]; !have && !w.mayCreateRankLocked(ev.DPRank, false) {
			rangeErr = rankRangeError(workerID, w, ev.DPRank)
			break
		}
		if ev.Kind == core.EventStored {
			stores[ev.DPRank] += uint64(len(ev.Blocks))
		}
	}
	x.mu.RUnlock()
	if rangeErr != nil {
		x.refuse(RefusedRankRange, len(evs), "an HTTP request named a dp_rank its worker does not have", "worker_id", workerID, "error", rangeErr)
		return rangeErr
	}
	limit := uint64(x.opts.MaxRankBlocks)
	for dpRank, n := range stores {
		held := w.index.WorkerBlocks(core.Worker{ID: workerID, DPRank: dpRank})
		if held+n > limit {
			err := fmt.Errorf("%w: worker %d dp_rank %d holds %d blocks; these events store %d more, beyond max_rank_blocks %d",
				ErrRankFull, workerID, dpRank, held, n, limit)
			x.refuse(RefusedRankFull, len(evs), "an HTTP request would take a worker rank beyond its block bound (max_rank_blocks)",
				"worker_id", workerID, "error", err)
			return err
		}
	}
	return nil
}

// ErrWarnedViolation: an event applied in warn mode had violations (a
// duplicate store, a reused name, a hash mismatch): counted, applied as
// the mode says, and reported to the HTTP publisher that sent it (core
// returns them as errors only in enforce mode).
var ErrWarnedViolation = errors.New("stability violation (warn mode: applied)")

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
