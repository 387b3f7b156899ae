package route

import (
	"sync"
	"sync/atomic"
	"time"
)

// The accounting of requests that end must not make a routing decision
// wait. Under a saturated CPU a goroutine that finds a lock taken is
// parked, and a parked goroutine runs again only after every runnable one
// ahead of it: a decision that waited behind a first-token or an end
// report for a microsecond could take milliseconds. So a caller that does
// not need the answer (the proxy, the endpoint picker) reports with
// PrefillDoneNoWait and FreeNoWait: applied at once when the router's
// lock is free, else queued, and the queue is applied by whoever holds
// the lock before it lets go (every decision, Stats, Expire: nothing ever
// reads the load with a report pending).

// pendingOp is one report queued while the router's lock was taken.
type pendingOp struct {
	id   string
	free bool      // else prefill done
	at   time.Time // when it was reported (the TTFT observation)
}

// pendingOps is the queue; its own lock is held only to append or swap.
type pendingOps struct {
	mu  sync.Mutex
	ops []pendingOp
	n   atomic.Int32 // len(ops), read without mu
}

// PrefillDoneNoWait is PrefillDone for a caller that does not need to
// know whether the request was active, and must not wait.
func (r *Router) PrefillDoneNoWait(id string) {
	r.report(pendingOp{id: id, at: r.now()})
}

// FreeNoWait is Free for a caller that does not need to know whether the
// request was active, and must not wait.
func (r *Router) FreeNoWait(id string) { r.report(pendingOp{id: id, free: true}) }

func (r *Router) report(op pendingOp) {
	r.pending.mu.Lock()
	r.pending.ops = append(r.pending.ops, op)
	r.pending.n.Add(1)
	r.pending.mu.Unlock()
	if r.mu.TryLock() {
		r.unlock()
	}
	// Else the holder applies it before it lets go (unlock).
}

// lock takes the router's lock and applies the queued reports.
func (r *Router) lock() {
	r.mu.Lock()
	r.applyPendingLocked()
}

// unlock applies the queued reports and lets go of the lock; a report
// queued after that, whose TryLock found the lock still taken, is taken
// care of by trying again (or by the next holder, who does the same).
func (r *Router) unlock() {
	for {
		r.applyPendingLocked()
		r.mu.Unlock()
		if r.pending.n.Load() == 0 || !r.mu.TryLock() {
			return
		}
	}
}

func (r *Router) applyPendingLocked() {
	if r.pending.n.Load() == 0 {
		return
	}
	r.pending.mu.Lock()
	ops := r.pending.ops
	r.pending.ops = r.pendingSpare[:0]
	r.pending.n.Store(0)
	r.pending.mu.Unlock()
	for _, op := range ops {
		if op.free {
			r.freeLocked(op.id)
		} else {
			r.prefillDoneLocked(op.id, op.at)
		}
	}
	clear(ops) // the ids
	r.pendingSpare = ops[:0]
}
