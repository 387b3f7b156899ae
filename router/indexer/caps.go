package indexer

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/kvhash/kvhash/core"
)

// Bounds on what engines' events (ZeroMQ, the event plane, POST
// /v1/events) can make the router keep, so that no publisher grows it
// without limit:
//
//   - A worker's ranks: an event names a rank it has (0..dp_size-1, or one
//     created before) or, from an engine stream only, one of at most
//     dp_size more: engines that number their ranks fleet-wide (rank 6 on
//     a pod's stream 0) get one extra rank per stream. Any other rank is
//     refused (ErrRankOutOfRange, RefusedRankRange) and creates nothing.
//   - A rank's blocks: a store that would take it beyond
//     Options.MaxRankBlocks is refused whole (SkipRankFull, RefusedRankFull);
//     the hashes of blocks not indexed are remembered up to the same bound.
//   - A worker registered from its stream (a bound endpoint's topic) with
//     a model name that is not a valid label (CheckLabel) is not
//     registered; its events are refused (RefusedLabel).
//
// Each refusal is counted (Refused) and logged at most once per
// refusalLogEvery per kind, with the fix.

// Refusal is why events were refused before reaching a rank.
type Refusal uint8

// The counted refusals.
const (
	// RefusedRankRange: the event's dp_rank is beyond what the worker has.
	RefusedRankRange Refusal = iota
	// RefusedRankFull: a store would take its rank beyond MaxRankBlocks.
	RefusedRankFull
	// RefusedLabel: a stream's worker could not be registered from it: its
	// model name is not a valid label.
	RefusedLabel
	NumRefusals
)

func (r Refusal) String() string {
	return [...]string{"dp_rank_out_of_range", "rank_full", "invalid_label", "unknown"}[min(r, NumRefusals)]
}

// refusalLogEvery: each kind of refusal is logged at most this often (a
// flood of refused events must not flood the log too).
const refusalLogEvery = 10 * time.Second

// refusals counts the events refused by kind, and limits their logs.
type refusals struct {
	count   [NumRefusals]atomic.Uint64
	nextLog [NumRefusals]atomic.Int64 // unix nanos
}

// Refused returns how many events were refused, by kind, since start.
func (x *Indexer) Refused() [NumRefusals]uint64 {
	var out [NumRefusals]uint64
	for k := range NumRefusals {
		out[k] = x.refused.count[k].Load()
	}
	return out
}

// refuse counts n events refused for kind and logs it, rate-limited.
func (x *Indexer) refuse(kind Refusal, n int, msg string, attrs ...any) {
	total := x.refused.count[kind].Add(uint64(n))
	now := x.now()
	next := &x.refused.nextLog[kind]
	last := next.Load()
	if now.UnixNano() < last || !next.CompareAndSwap(last, now.Add(refusalLogEvery).UnixNano()) {
		return
	}
	attrs = append(attrs, "reason", kind.String(), "refused_events_total", total,
		"note", "logged at most every "+refusalLogEvery.String()+"; counted in kvrouter_refused_events_total")
	x.opts.Logger.Warn("kvrouter: events refused: "+msg, attrs...)
}

// mayCreateRankLocked reports whether an event may create rank dpRank of
// w (see the bounds above); fromStream: an engine stream's batch, which
// may name ranks numbered fleet-wide. The caller holds x.mu.
func (w *worker) mayCreateRankLocked(dpRank uint32, fromStream bool) bool {
	size := uint32(max(w.spec.DPSize, 1))
	if dpRank < size {
		return true
	}
	if !fromStream {
		return false
	}
	extra := uint32(0)
	for r := range w.ranks {
		if r >= size {
			extra++
		}
	}
	return extra < size
}

// eventRank returns the worker and rank an event of (id, dpRank) goes to,
// creating the rank when the bounds allow it. Unknown workers give nil
// and no error.
func (x *Indexer) eventRank(id uint64, dpRank uint32, fromStream bool) (*worker, *rank, error) {
	x.mu.RLock()
	w, ok := x.workers[id]
	var r *rank
	if ok {
		r = w.ranks[dpRank]
	}
	allowed := ok && r == nil && w.mayCreateRankLocked(dpRank, fromStream)
	x.mu.RUnlock()
	if !ok || r != nil {
		return w, r, nil
	}
	if !allowed { // refused under the read lock: a flood of them never blocks the registry
		return w, nil, rankRangeError(id, w, dpRank)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.workers[id] != w { // removed or replaced meanwhile
		return nil, nil, nil
	}
	if r = w.ranks[dpRank]; r != nil {
		return w, r, nil
	}
	if !w.mayCreateRankLocked(dpRank, fromStream) {
		return w, nil, rankRangeError(id, w, dpRank)
	}
	r = newRank(core.Worker{ID: id, DPRank: dpRank}, x.opts.Now())
	x.addRankLocked(w, r)
	return w, r, nil
}

func rankRangeError(id uint64, w *worker, dpRank uint32) error {
	return fmt.Errorf("%w: worker %d has dp_size %d; dp_rank %d is not one of its ranks "+
		"(register the worker with the dp_size its engine runs)", ErrRankOutOfRange, id, max(w.spec.DPSize, 1), dpRank)
}

// roomLocked reports whether the rank may take n more blocks within
// MaxRankBlocks. r.held is an upper bound of the blocks the rank holds
// (only its own stores, made under its mutex, add any), so core is asked
// for the exact count only when the bound says the cap may be near.
func (a *applier) roomLocked(n int) bool {
	r, limit := a.r, uint64(a.x.opts.MaxRankBlocks)
	if !r.heldValid || r.held+uint64(n) > limit {
		r.held, r.heldValid = a.w.index.WorkerBlocks(r.w), true
	}
	if r.held+uint64(n) > limit {
		return false
	}
	r.held += uint64(n)
	return true
}

// refuseFull counts a store refused for the rank's bound.
func (a *applier) refuseFull(n int) {
	a.x.refuse(RefusedRankFull, 1, "a worker rank is at its block bound (max_rank_blocks)",
		"worker_id", a.r.w.ID, "dp_rank", a.r.w.DPRank, "model", a.w.key.Model, "blocks", a.r.held, "store_blocks", n,
		"max_rank_blocks", a.x.opts.MaxRankBlocks,
		"fix", "if the engine really holds this many blocks (an offload tier indexed with index_media), raise --max-rank-blocks; "+
			"else its removals are lost: check the engine's event stream")
}

// AddWorkerIfAbsent registers a worker unless its id is known (then it
// leaves it as it is, and reports false): what a stream does for a worker
// it finds first (a bound endpoint's topic), for callers that bound how
// many such workers there are and so must register them when they accept
// their topic, not when their first event arrives.
func (x *Indexer) AddWorkerIfAbsent(spec WorkerSpec) (bool, error) {
	return x.addWorker(spec, false)
}
