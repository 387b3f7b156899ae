package indexer

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/enginehash"
)

// rank is one (worker, dp rank)'s state. Its fields below mu are guarded
// by mu; state is also readable without it.
type rank struct {
	w     core.Worker
	state atomic.Uint32 // a State
	// awaiting: its stream has not connected yet (Options.AwaitConnect).
	awaiting atomic.Bool

	mu sync.Mutex
	// gone: the rank was removed from the registry; a handler that still
	// holds it drops its events instead of putting blocks back.
	gone        bool
	reason      string
	since       time.Time
	connected   bool
	haveSeq     bool
	lastSeq     uint64
	streamRank  uint32
	lastEventAt time.Time
	lag         float64
	events      [NumEventKinds][NumOutcomes]uint64
	skipped     [NumSkipReasons]uint64
	gaps        uint64
	replayed    uint64
	restarts    uint64
	malformed   uint64
	quarantines uint64

	// storesSince counts stores applied since the rank left live;
	// cleanSince is when a quarantined rank's last violation happened.
	storesSince uint64
	cleanSince  time.Time

	// salts: the cache salt of each salted block the rank holds, by engine
	// hash. skippedHashes: engine hashes of blocks not indexed (so their
	// children are skipped too and their removals are not core's
	// block_not_found).
	salts         map[uint64]string
	skippedHashes map[uint64]struct{}
	// held is an upper bound of the blocks the rank holds in the index
	// (exact when taken from core; stores add to it, removals do not take
	// from it); heldValid says it is set. See applier.roomLocked.
	held      uint64
	heldValid bool
	// warned: the skip reasons already warned about (one bit each).
	warned uint32

	// vs is the rank's engine-hash verification (verify.go); verified is
	// its verified candidate (nil when not verified), readable without mu
	// for the cross-worker agreement check.
	vs       verifyState
	verified atomic.Pointer[enginehash.Candidate]

	// scratch for one store: local hashes and core blocks.
	local  []uint64
	blocks []core.StoredBlock
}

func newRank(w core.Worker, now time.Time) *rank {
	r := &rank{w: w, since: now, streamRank: w.DPRank}
	r.state.Store(uint32(StateLive))
	return r
}

// retireLocked marks a removed rank. The caller holds x.mu (lock order:
// Indexer.mu, then a rank's mu) and clears the rank's blocks after it, so
// no event of the rank applies in between.
func (x *Indexer) retireLocked(r *rank) {
	r.mu.Lock()
	r.gone = true
	r.mu.Unlock()
	x.violations.untrack(r)
}

func (r *rank) State() State { return State(r.state.Load()) }

// shownState is State, or StateConnecting for a live rank whose stream
// has not connected yet.
func (r *rank) shownState() State {
	s := r.State()
	if s == StateLive && r.awaiting.Load() {
		return StateConnecting
	}
	return s
}

// setStateLocked moves the rank to s with a reason.
func (r *rank) setStateLocked(s State, reason string, now time.Time) {
	r.state.Store(uint32(s))
	r.reason, r.since = reason, now
	r.storesSince = 0
	r.cleanSince = now
}

// forgetLocked drops what the rank remembers about its blocks (after its
// blocks were cleared from the index).
func (r *rank) forgetLocked() {
	clear(r.salts)
	clear(r.skippedHashes)
	clear(r.vs.digests)
	r.heldValid = false
}

func (r *rank) info() RankInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return RankInfo{
		Worker:      r.w,
		State:       r.shownState(),
		Reason:      r.reason,
		Since:       r.since,
		Connected:   r.connected,
		HaveSeq:     r.haveSeq,
		LastSeq:     r.lastSeq,
		StreamRank:  r.streamRank,
		LastEventAt: r.lastEventAt,
		LagSeconds:  r.lag,
		Events:      r.events,
		Skipped:     r.skipped,
		Gaps:        r.gaps,
		Replayed:    r.replayed,
		Restarts:    r.restarts,
		Malformed:   r.malformed,
		Quarantines: r.quarantines,
		EngineHash:  r.vs.info(),
	}
}
