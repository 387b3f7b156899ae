package indexer

import (
	"github.com/kvhash/kvhash/router/ingest"
)

// applier applies one batch's (or one HTTP event's) events of one rank,
// with the rank's mutex held.
type applier struct {
	x       *Indexer
	w       *worker
	r       *rank
	src     *ingest.Source // nil for HTTP events: no replay to ask for
	eventID uint64
	// replay: a quarantine wants the stream replayed. It is asked for
	// once the rank's mutex is released: the requester may call back.
	replay *ingest.Source
	// verdictChanged: a rank's engine-hash verdict changed; the model's
	// agreement is checked once the mutex is released.
	verdictChanged bool
}

func (a *applier) engineEvent(ev *ingest.Event) {
	switch ev.Kind {
	case ingest.BlockStored:
		a.stored(ev)
	case ingest.BlockRemoved:
		a.removed(ev)
	case ingest.AllBlocksCleared:
		a.cleared()
	}
}

// removed applies a BlockRemoved: hashes of skipped blocks are forgotten,
// not sent to core (which never saw them).
func (a *applier) removed(ev *ingest.Event) {
	r := a.r
	if !a.x.mediumIndexed(ev.Medium) || ev.Locality == "REMOTE" {
		r.events[KindRemoved][OutcomeSkipped]++
		return
	}
	hashes := ev.BlockHashes
	if len(r.skippedHashes) > 0 {
		hashes = make([]uint64, 0, len(ev.BlockHashes))
		for _, h := range ev.BlockHashes {
			if r.isSkipped(h) {
				delete(r.skippedHashes, h)
				continue
			}
			hashes = append(hashes, h)
		}
	}
	for _, h := range hashes {
		delete(r.salts, h)
	}
	r.forgetDigests(hashes)
	if len(hashes) == 0 && len(ev.BlockHashes) > 0 {
		r.events[KindRemoved][OutcomeSkipped]++
		return
	}
	a.outcome(KindRemoved, a.w.index.ApplyRemoved(r.w, a.eventID, hashes))
}

// cleared applies AllBlocksCleared: the index is exact again, so a
// degraded rank is live.
func (a *applier) cleared() {
	r := a.r
	a.w.index.ClearWorker(r.w)
	r.forgetLocked()
	r.events[KindCleared][OutcomeApplied]++
	if r.State() == StateDegraded {
		r.setStateLocked(StateLive, "", a.x.now())
		a.x.opts.Logger.Info("kvrouter: worker live again: the engine cleared its cache",
			"worker_id", r.w.ID, "dp_rank", r.w.DPRank)
	}
}
