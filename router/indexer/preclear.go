package indexer

import "github.com/kvhash/kvhash/core"

// Removing a worker or a rank drops its blocks under Indexer.mu, which
// every route takes to read the registry: a rank of 250,000 blocks held
// it for 20-28 ms. So the registry changes that drop blocks (AddWorker,
// RemoveWorker, RemoveRank) first clear each rank they will remove ahead,
// outside Indexer.mu, under the rank's own mutex (its events wait), as
// its engine's "cleared" event would, core releasing the blocks a section
// at a time (core/index_clear.go); the removal under Indexer.mu then finds
// little left. regMu keeps another such change from altering in between
// what is to be removed.

// dropping is a rank a registry change is about to remove, with its
// index.
type dropping struct {
	index *core.Index
	r     *rank
}

// preClear clears the ranks' blocks ahead of their removal.
func preClear(ds []dropping) {
	for _, d := range ds {
		d.r.mu.Lock()
		if !d.r.gone {
			d.index.ClearWorker(d.r.w)
			d.r.forgetLocked()
		}
		d.r.mu.Unlock()
	}
}

// ranksDropping lists the ranks of worker id for which drop says yes.
func (x *Indexer) ranksDropping(id uint64, drop func(w *worker, r *rank) bool) []dropping {
	x.mu.RLock()
	defer x.mu.RUnlock()
	w, ok := x.workers[id]
	if !ok {
		return nil
	}
	var out []dropping
	for _, r := range w.sorted {
		if drop(w, r) {
			out = append(out, dropping{index: w.index, r: r})
		}
	}
	return out
}

// workerDropping lists every rank of worker id, which RemoveWorker drops.
func (x *Indexer) workerDropping(id uint64) []dropping {
	return x.ranksDropping(id, func(*worker, *rank) bool { return true })
}

// rankDropping lists rank dpRank of worker id, which RemoveRank drops.
func (x *Indexer) rankDropping(id uint64, dpRank uint32) []dropping {
	return x.ranksDropping(id, func(_ *worker, r *rank) bool { return r.w.DPRank == dpRank })
}

// updateDropping lists the ranks an update of worker spec.WorkerID to
// spec would remove (addWorker): all of them when it moves to another
// index, else those from the new dp_size to the old one.
func (x *Indexer) updateDropping(spec WorkerSpec, key ModelKey) []dropping {
	return x.ranksDropping(spec.WorkerID, func(w *worker, r *rank) bool {
		return w.key != key || (r.w.DPRank >= uint32(spec.DPSize) && r.w.DPRank < uint32(w.spec.DPSize))
	})
}
