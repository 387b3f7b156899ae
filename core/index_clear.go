package core

import (
	"cmp"
	"slices"
)

// A clear (ClearWorker, ClearAllBlocks, RemoveWorker) of a rank holding
// many blocks is applied in sections too, as a long store is: it used to
// release every block under one hold of the write lock, 20 ms for a rank
// of 100,000 blocks and 110 ms for one of a million, a stall of every
// match each time an engine restarted or a rank was quarantined.
//
// A large clear reads the rank's names a few halves of its name table
// per hold, then removes them (as a removal event of those names would)
// a section per hold, each run's last blocks first (the removal's fast
// path), and ends with the one-shot clear of what is left: its unnamed
// blocks and its stats. Between two holds a match sees the rank with
// part of its blocks, never more than it held. Meanwhile the rank's own
// mutations (its stores, removals and other clears) wait for the clear to
// end, so that they apply before or after it, never inside: the names it
// read stay the rank's, and its name table does not change under the
// reading. Other ranks go on.

// clearAtOnce is how many blocks (in sections of writeSection) a rank may
// hold for its clear to be applied under one hold, as before.
const clearAtOnce = 4

// clearName is one of a clearing rank's names and its block.
type clearName struct {
	name uint64
	b    blockRef
}

// lockWriteFor takes the write lock once no clear of w is running.
func (x *Index) lockWriteFor(w Worker) {
	x.mu.Lock()
	if len(x.clearing) > 0 {
		x.waitClearsLocked(func() chan struct{} { return x.clearing[w] })
	}
	if x.holdProbe != nil {
		x.holdProbe(true)
	}
}

// lockWriteForID takes the write lock once no clear of a rank of worker id
// is running.
func (x *Index) lockWriteForID(id uint64) {
	x.mu.Lock()
	x.waitClearsLocked(func() chan struct{} {
		for w, done := range x.clearing {
			if w.ID == id {
				return done
			}
		}
		return nil
	})
	if x.holdProbe != nil {
		x.holdProbe(true)
	}
}

// waitClearsLocked waits, the write lock let go meanwhile, for each clear
// that running (called under the lock) returns, until it returns none.
func (x *Index) waitClearsLocked(running func() chan struct{}) {
	for done := running(); done != nil; done = running() {
		x.mu.Unlock()
		<-done
		x.mu.Lock()
	}
}

// clearRank clears rank w (interned if new, as the one-shot clear does),
// a section per hold when it holds many blocks. It takes the write lock
// itself and returns without it.
func (x *Index) clearRank(w Worker) {
	x.lockWriteFor(w)
	wi := x.t.intern(w)
	section := x.section()
	if x.t.workers[wi].lookup.len() <= clearAtOnce*section {
		x.t.clear(wi)
		x.unlockWrite()
		return
	}
	done := make(chan struct{})
	if x.clearing == nil {
		x.clearing = map[Worker]chan struct{}{}
	}
	x.clearing[w] = done
	defer func() {
		x.lockWrite()
		delete(x.clearing, w)
		close(done)
		// What is left: the rank's unnamed blocks, its unstable mark.
		x.t.clear(x.t.intern(w))
		x.unlockWrite()
	}()

	// Read the names, a few halves per hold: nothing else changes the
	// rank's table meanwhile, so they fit the array made for them off the
	// lock (appending under it, the array's growth copied it all in one
	// hold: 23 ms at 250,000 names).
	n := x.t.workers[wi].lookup.len()
	x.unlockWrite()
	names := make([]clearName, 0, n)
	halves := max(1, section/2)
	x.lockWrite()
	for at := 0; ; {
		var end bool
		names, at, end = x.t.workers[wi].lookup.appendNamesAt(names, x.t.nameKeys(wi), at, halves)
		x.unlockWrite()
		if end {
			break
		}
		x.lockWrite()
	}
	// Last blocks first: a run's blocks are at rising positions of its
	// segment, so each removal but the first of a run eats its tail.
	slices.SortFunc(names, func(a, b clearName) int { return cmp.Compare(b.b, a.b) })
	hashes := make([]uint64, len(names))
	for i, n := range names {
		hashes[i] = n.name
	}
	// The names are the rank's own, read under the lock, so none is
	// missing: the report stays empty (TestLargeClearIsSectioned checks
	// that no violation is counted).
	var r report
	r.begin(w, 0, ModeWarn)
	for i := 0; i < len(hashes); i += section {
		x.lockWrite()
		x.t.removed(w, 0, hashes[i:min(len(hashes), i+section)], &r)
		x.unlockWrite()
	}
}
