package route

import (
	"sync/atomic"

	"github.com/kvhash/kvhash/core"
)

// Load sync between router replicas (router/eventplane): each replica
// tells the others what it routed, prefilled and freed, and adds their
// requests to its own load table under their owner's name, so the cost
// of every replica sees the whole fleet's load. This file is that API:
// an observer of the local changes, and the remote side's add, prefill
// done, free and the expiry of a vanished owner.

// LoadOp says what changed in the active load.
type LoadOp uint8

// The load changes a replica reports.
const (
	LoadRouted LoadOp = iota + 1
	LoadPrefillDone
	LoadFreed
)

// LoadEvent is one change this Router made to its own requests' load.
type LoadEvent struct {
	Op            LoadOp
	RequestID     string
	Worker        core.Worker // LoadRouted only
	PrefillTokens uint64      // LoadRouted only
	Blocks        []uint64    // LoadRouted only: the request's sequence hashes (do not modify)
}

// LoadObserver hears each local load change, in order, with the Router's
// lock held: it must not block or call the Router.
type LoadObserver func(LoadEvent)

type observerBox struct{ f LoadObserver }

// remoteState is the Router's replica side, kept apart from route.go.
type remoteState struct {
	observer atomic.Pointer[observerBox]
	// owners: the remote requests by owner replica, guarded by Router.mu.
	owners map[string]map[string]struct{}
}

// SetLoadObserver installs f (nil removes it).
func (r *Router) SetLoadObserver(f LoadObserver) {
	if f == nil {
		r.remote.observer.Store(nil)
		return
	}
	r.remote.observer.Store(&observerBox{f: f})
}

// notifyLocked tells the observer, if any, about a local change.
func (r *Router) notifyLocked(ev LoadEvent) {
	if b := r.remote.observer.Load(); b != nil {
		b.f(ev)
	}
}

// remoteKey names a remote request in the load table. The NUL bytes keep
// it apart from local ids, which come from HTTP and never contain them in
// practice.
func remoteKey(owner, id string) string { return "\x00r\x00" + owner + "\x00" + id }

// AddRemote adds another replica's routed request to the load. A request
// already known is left as it is (a repeated message); it reports whether
// it was added.
func (r *Router) AddRemote(owner, id string, w core.Worker, prefillTokens uint64, blocks []uint64) bool {
	key := remoteKey(owner, id)
	r.lock()
	defer r.unlock()
	if r.load.has(key) {
		return false
	}
	r.load.add(key, w, prefillTokens, blocks, r.now(), false)
	if r.remote.owners == nil {
		r.remote.owners = map[string]map[string]struct{}{}
	}
	ids := r.remote.owners[owner]
	if ids == nil {
		ids = map[string]struct{}{}
		r.remote.owners[owner] = ids
	}
	ids[key] = struct{}{}
	if len(ids) > 1024 && len(ids) > 2*r.load.active() {
		// Requests the TTL expired (their free was lost) leave their key
		// behind: drop those once they are most of the owner's.
		for k := range ids {
			if !r.load.has(k) {
				delete(ids, k)
			}
		}
	}
	return true
}

// PrefillDoneRemote marks another replica's request's prefill done.
func (r *Router) PrefillDoneRemote(owner, id string) bool {
	r.lock()
	defer r.unlock()
	return r.load.prefillDone(remoteKey(owner, id))
}

// FreeRemote ends another replica's request.
func (r *Router) FreeRemote(owner, id string) bool {
	key := remoteKey(owner, id)
	r.lock()
	defer r.unlock()
	delete(r.remote.owners[owner], key)
	return r.load.free(key)
}

// ExpireOwner ends every request of a replica that vanished (or
// restarted: its old requests are gone with it) and returns how many were
// still active.
func (r *Router) ExpireOwner(owner string) int {
	r.lock()
	defer r.unlock()
	n := 0
	for key := range r.remote.owners[owner] {
		if r.load.free(key) {
			n++
		}
	}
	delete(r.remote.owners, owner)
	r.expired += uint64(n)
	return n
}
