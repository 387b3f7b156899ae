package indexer

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/kvhash/kvhash/core"
)

// Saved is everything a snapshot keeps of an Indexer: the registry, each
// index as core's dump, and per rank its last seq, salts and skipped
// hashes. Export takes it; Restore puts it back into an empty Indexer.
type Saved struct {
	BlockSize int
	Workers   []WorkerSpec // sorted by id
	Indexes   []IndexState // sorted by key
	Ranks     []RankState  // sorted by worker
}

// IndexState is one index: its key and core's dump of it.
type IndexState struct {
	Key    ModelKey
	Events []core.RouterEvent
}

// RankState is what a rank remembers beyond the index.
type RankState struct {
	Worker  core.Worker
	HaveSeq bool
	LastSeq uint64
	// StreamRank is the rank of the stream (Source.DPRank) whose batches
	// LastSeq counts: the worker rank itself unless the engine numbers its
	// ranks globally. Resume that stream at LastSeq+1.
	StreamRank uint32
	Salts      []Salt   // sorted by hash
	Skipped    []uint64 // engine hashes not indexed, sorted
}

// Salt is one salted block of a rank: its engine hash and its salt.
type Salt struct {
	Hash uint64
	Salt string
}

// Export returns the Indexer's state to save. Each index is dumped while
// its ranks' event handling waits, so an index and its ranks' seqs agree.
func (x *Indexer) Export() Saved {
	s := Saved{BlockSize: x.opts.BlockSize}
	x.mu.RLock()
	groups := map[ModelKey][]*rank{}
	ixs := map[ModelKey]*core.Index{}
	for _, w := range x.workers {
		s.Workers = append(s.Workers, w.spec)
		ixs[w.key] = w.index
		for _, r := range w.ranks {
			groups[w.key] = append(groups[w.key], r)
		}
	}
	x.mu.RUnlock()
	slices.SortFunc(s.Workers, func(a, b WorkerSpec) int { return cmp.Compare(a.WorkerID, b.WorkerID) })
	keys := slices.SortedFunc(maps.Keys(ixs), compareKeys)
	for _, k := range keys {
		ranks := groups[k]
		// A fixed lock order (by worker) keeps two exports from deadlocking.
		slices.SortFunc(ranks, func(a, b *rank) int { return a.w.Compare(b.w) })
		for _, r := range ranks {
			r.mu.Lock()
		}
		s.Indexes = append(s.Indexes, IndexState{Key: k, Events: ixs[k].Dump()})
		for _, r := range ranks {
			s.Ranks = append(s.Ranks, r.savedLocked())
			r.mu.Unlock()
		}
	}
	slices.SortFunc(s.Ranks, func(a, b RankState) int { return a.Worker.Compare(b.Worker) })
	return s
}

func (r *rank) savedLocked() RankState {
	rs := RankState{Worker: r.w, HaveSeq: r.haveSeq, LastSeq: r.lastSeq, StreamRank: r.streamRank}
	for h, salt := range r.salts {
		rs.Salts = append(rs.Salts, Salt{Hash: h, Salt: salt})
	}
	slices.SortFunc(rs.Salts, func(a, b Salt) int { return cmp.Compare(a.Hash, b.Hash) })
	rs.Skipped = slices.Sorted(maps.Keys(r.skippedHashes))
	return rs
}

// Restore loads a saved state into an empty Indexer (no workers). The
// block size must be the Indexer's. Restored ranks are live; the caller
// asks the engines to replay from each rank's LastSeq+1. On error the
// Indexer is emptied again.
func (x *Indexer) Restore(s Saved) (err error) {
	if s.BlockSize != x.opts.BlockSize {
		return fmt.Errorf("indexer: restore: saved at block size %d, the router runs at %d", s.BlockSize, x.opts.BlockSize)
	}
	x.mu.RLock()
	empty := len(x.workers) == 0
	x.mu.RUnlock()
	if !empty {
		return fmt.Errorf("indexer: restore: the indexer already has workers")
	}
	defer func() {
		if err != nil {
			x.mu.Lock()
			x.workers = map[uint64]*worker{}
			x.indexes = map[ModelKey]*core.Index{}
			x.mu.Unlock()
		}
	}()
	for _, spec := range s.Workers {
		if _, err := x.AddWorker(spec); err != nil {
			return fmt.Errorf("indexer: restore: %w", err)
		}
	}
	for _, is := range s.Indexes {
		ix, err := x.index(is.Key)
		if err != nil {
			return fmt.Errorf("indexer: restore: an index without workers: %w", err)
		}
		// A dump replays aliased names as hash mismatches again; in warn
		// mode those are counted, not errors, and mark nobody unstable.
		ix.SetMode(core.ModeWarn)
		for i, ev := range is.Events {
			if err := ix.ApplyRouterEvent(ev); err != nil && (errors.Is(err, core.ErrEventRejected) || !errors.Is(err, core.ErrStability)) {
				ix.SetMode(x.opts.Mode)
				return fmt.Errorf("indexer: restore: model %q tenant %q event %d: %w", is.Key.Model, is.Key.Tenant, i, err)
			}
		}
		ix.SetMode(x.opts.Mode)
	}
	for _, rs := range s.Ranks {
		_, r := x.rankFor(rs.Worker.ID, rs.Worker.DPRank)
		if r == nil {
			return fmt.Errorf("indexer: restore: rank of unknown worker %d", rs.Worker.ID)
		}
		r.mu.Lock()
		r.haveSeq, r.lastSeq, r.streamRank = rs.HaveSeq, rs.LastSeq, rs.StreamRank
		for _, sl := range rs.Salts {
			if r.salts == nil {
				r.salts = map[uint64]string{}
			}
			r.salts[sl.Hash] = sl.Salt
		}
		for _, h := range rs.Skipped {
			if r.skippedHashes == nil {
				r.skippedHashes = map[uint64]struct{}{}
			}
			r.skippedHashes[h] = struct{}{}
		}
		r.mu.Unlock()
	}
	return nil
}
