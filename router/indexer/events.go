package indexer

import (
	"errors"
	"fmt"

	"github.com/kvhash/kvhash/core"
)

// ApplyEvent applies one Dynamo-JSON event (core.DecodeEvent) of a
// registered worker, for publishers that compute the local hashes
// themselves (POST /v1/events?worker_id=N). The rank is ev.DPRank. It goes
// through the same counters and guardrails as engine events (there is no
// stream to replay, so a quarantine asks for none); the error is core's
// (a stability violation) or ErrUnknownWorker.
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
		err = w.index.ApplyStored(r.w, ev.ID, ev.ParentHash, ev.Blocks)
		if !errors.Is(err, core.ErrEventRejected) {
			r.storesSince++
		}
		a.outcome(KindStored, err)
	case core.EventRemoved:
		err = w.index.ApplyRemoved(r.w, ev.ID, ev.BlockHashes)
		a.outcome(KindRemoved, err)
	case core.EventCleared:
		a.cleared()
	default:
		return fmt.Errorf("%w: event %d of worker %d has unknown kind %d", core.ErrInvalidArgument, ev.ID, workerID, ev.Kind)
	}
	x.settleLocked(r, now)
	return err
}
