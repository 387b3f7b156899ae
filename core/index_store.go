package core

import "unsafe"

// How a store event is applied: the walk down from its parent, block by
// block, with the common case (blocks new to the tree) written out.

// endRunAt makes block b (or the root) the last block of its run, so
// that a child can hang off it, and returns that run.
func (t *tree) endRunAt(b blockRef) uint32 {
	if b == rootRef {
		return rootRun
	}
	id, off := t.runAt(b)
	if off+1 < t.runs.at(id).len() {
		return t.split(id, off+1)
	}
	return id
}

// isDetachedTop reports whether block b heads a detached run.
func (t *tree) isDetachedTop(b blockRef) bool {
	id, off := t.runAt(b)
	return off == 0 && t.runs.at(id).parent == noRun
}

// chainTop returns the top of cur's ancestor chain: rootRef when cur is
// attached, else the first block of the detached run above it. It is
// cached for the walk of one store (a store only descends, so the top
// stays the same until the tree's shape changes).
func (t *tree) chainTop(cur blockRef) blockRef {
	if !t.topValid {
		t.topCache = t.top(cur)
		t.topValid = true
	}
	return t.topCache
}

func (t *tree) top(b blockRef) blockRef {
	if b == rootRef {
		return rootRef
	}
	id, _ := t.runAt(b)
	for {
		p := t.runs.at(id).parent
		if p == rootRun {
			return rootRef
		}
		if p == noRun {
			return t.runs.at(id).first()
		}
		id = p
	}
}

// newBlock adds block (x, l) under cur, which has no child under l,
// held by nobody yet: appended to cur's run when cur ends a run that can
// grow, else as a new run with room for the n blocks a store has left.
func (t *tree) newBlock(cur blockRef, x, l uint64, n int) blockRef {
	p := t.endRunAt(cur)
	if t.canExtend(p) {
		return t.extend(p, x, l, n)
	}
	c := t.startRun(x, l, n)
	t.link(p, c)
	return t.runs.at(c).first()
}

// reattach links old, the first block of a detached run, under cur as its
// child under local hash l (cur has none).
func (t *tree) reattach(cur, old blockRef, l uint64) {
	oid, _ := t.runAt(old)
	s := t.segs.at(old.seg())
	s.locals[old.pos()-s.base] = l
	t.runs.at(oid).key = l
	p := t.endRunAt(cur)
	t.link(p, oid)
	t.topValid = false
}

// stored applies a store, or (more) the next section of one, chained
// under the last block of the section before (Index.ApplyStored); later
// blocks of the store follow this section's (a new segment gets room for
// them too, so that the next sections extend it without copying it). It
// reports whether the store goes on: not when it was dropped, nor when a
// section finds the worker no longer names its parent (another writer
// cleared or removed the worker in between: what is left of the store is
// dropped, as if it had come after, without a violation).
func (t *tree) stored(w Worker, _ uint64, parent *uint64, blocks []StoredBlock, later int, more bool, r *report) bool {
	wi := t.intern(w)
	cur := rootRef
	if parent != nil {
		ks := t.nameKeys(wi)
		p, ok := t.workers[wi].lookup.get(*parent, &ks)
		if !ok {
			if !more {
				t.violation(wi, r, ViolationParentNotFound, *parent, 0)
			}
			return false
		}
		cur = blockRef(p &^ slotAliased)
	}
	t.topValid = false
	lookup := &t.workers[wi].lookup
	// Each block the store names is a new name of wi's (but for a block it
	// already holds): grow its table once, before the probes start.
	ks := t.nameKeys(wi)
	lookup.reserve(len(blocks), &ks)
	for i := 0; i < prefetchDistance; i += 2 * prefetchBatch {
		prefetchStored(lookup, blocks, i)
	}
	prefetched := 0 // the lookups of blocks[:prefetched+prefetchDistance] are started
	for i := 0; i < len(blocks); i++ {
		if i >= prefetched {
			prefetched = i + 2*prefetchBatch
			prefetchStored(lookup, blocks, i+prefetchDistance)
		}
		x, l := blocks[i].BlockHash, blocks[i].TokensHash
		n := t.child(cur, l)
		// One probe for a new name: where x was not found is where bind
		// puts it (at), as nothing changes the lookup in between.
		v, named, at := lookup.find(x, &ks)
		old := blockRef(v &^ slotAliased)
		fresh := false
		switch {
		case n != noRef:
			if ext := t.extOf(n); ext != x {
				t.violation(wi, r, ViolationHashMismatch, x, ext)
			}
		case named && t.isDetachedTop(old) && old != t.chainTop(cur):
			// The worker still holds this block under a parent that was
			// dropped (it is detached): re-attach it here, as Dynamo does,
			// unless that would close a cycle.
			t.reattach(cur, old, l)
			n = old
		default:
			n = t.newBlock(cur, x, l, len(blocks)-i+later)
			fresh = !named
		}
		if named && old == n {
			t.violation(wi, r, ViolationDuplicateStore, x, 0)
		} else {
			if named {
				// x named another block of w: w keeps that block
				// unnamed rather than leaving it, so that no block w
				// holds below it (in this store or before) is cut off.
				t.violation(wi, r, ViolationNameReused, x, 0)
				t.ghost(wi, old, x)
				at = -1
			}
			t.bind(wi, n, x, at)
		}
		cur = n
		if fresh {
			k := t.appendFresh(wi, n, blocks[i+1:], later)
			i += k
			cur += blockRef(k)
		}
	}
	return true
}

// appendFresh appends the blocks of a store that follow a block it just
// added, while their names are new to worker wi, and returns how many:
// the store's usual tail. last, the block just added, is the last of its
// run, which ends its segment, has no child and is wholly held by wi, so
// each block is what the general step would do (no child to find, a new
// block appended in place, wi's cut one longer) without its lookups. A
// segment that must grow makes room for the later blocks of the store
// (its next sections) too.
func (t *tree) appendFresh(wi uint32, last blockRef, rest []StoredBlock, later int) int {
	id, _ := t.runAt(last)
	r := t.runs.at(id)
	sid := r.seg
	s := t.segs.at(sid)
	lookup := &t.workers[wi].lookup
	ks := t.nameKeys(wi)
	// The segment's arrays and the next block's ref are kept in locals (the
	// compiler would otherwise store them back through s at every block).
	locals, exts := s.locals, s.exts
	next := r.last() + 1
	// The segment's last position ends the run's growth here: what is
	// left of the store goes on in a run of its own (canExtend).
	rest = rest[:min(len(rest), int(t.maxPositions()-r.hi))]
	n := 0
	for ; n < len(rest); n++ {
		if n%(2*prefetchBatch) == 0 {
			prefetchStored(lookup, rest, n+prefetchDistance)
		}
		x, l := rest[n].BlockHash, rest[n].TokensHash
		if len(locals) == cap(locals) {
			s.locals, s.exts = locals, exts
			t.grow(sid, len(rest)-n+later)
			locals, exts = s.locals, s.exts
		}
		locals = append(locals, l)
		exts = append(exts, x)
		// The name table checks a candidate slot against its block's name
		// in the segment, which may be one appended here: keep the
		// segment's names current.
		s.exts = exts
		if !lookup.add(x, uint64(next), &ks) {
			// x names a block of wi already: the general step's case.
			locals, exts = locals[:len(locals)-1], exts[:len(exts)-1]
			break
		}
		next++
	}
	s.locals, s.exts = locals, exts
	r.hi += uint32(n)
	r.holders[r.holderIndex(wi)].cut += uint32(n)
	t.live += uint64(n)
	return n
}

// An event has the name lookups of the blocks prefetchDistance ahead of
// the one it works on fetched, a batch of prefetchBatch every
// prefetchBatch blocks: nearly every first probe into a worker's large
// name table is a cache miss, and misses started early overlap each other
// and the work on the blocks before instead of each stalling the walk in
// turn. (Measured with BenchmarkApplySteady: 8 blocks ahead took a fifth
// off a block's time, 16 a little more; fetching both lines of a group
// counts as much as the distance.)
const (
	prefetchBatch    = 4
	prefetchDistance = 16
)

// prefetchNames starts the lookups of names[i:i+2*prefetchBatch] that a
// removal makes: the home halves of their buckets, where a name that is
// there nearly always is.
func prefetchNames(m *nameTable, names []uint64, i int) {
	if len(m.halves) == 0 || i >= len(names) {
		return
	}
	var lines [8]unsafe.Pointer
	n := min(len(lines), len(names)-i)
	for j := range n {
		lines[j] = m.homeAddr(names[i+j])
	}
	for j := n; j < len(lines); j++ {
		lines[j] = lines[0] // a short event's last batch
	}
	prefetch8(&lines)
}

// prefetchStored starts the lookups of the names of
// blocks[i:i+2*prefetchBatch], which a store adds: their whole buckets (a
// new name goes to its home half, or, that one full, the other). A
// churned table is at most half full (nameTable.turnedOver), so a new
// name's home half nearly always has room: only the home halves are
// fetched, half the lines (measured on the evicting streams: 6-14 % more
// apply throughput; in a table that only grows, fuller, the other half is
// worth its line).
func prefetchStored(m *nameTable, blocks []StoredBlock, i int) {
	if len(m.halves) == 0 || i >= len(blocks) {
		return
	}
	var lines [8]unsafe.Pointer
	if o := m.old; o != nil {
		// A table being drained: a new name's home in the old halves is
		// checked too (nameTable.add).
		n := min(len(lines), len(blocks)-i)
		for j := range n {
			lines[j] = o.bucketAddr(blocks[i+j].BlockHash)
		}
		for j := n; j < len(lines); j++ {
			lines[j] = lines[0]
		}
		prefetch8(&lines)
	}
	if m.churned {
		n := min(len(lines), len(blocks)-i)
		for j := range n {
			lines[j] = m.homeAddr(blocks[i+j].BlockHash)
		}
		for j := n; j < len(lines); j++ {
			lines[j] = lines[0] // a short event's last batch
		}
		prefetch8(&lines)
		return
	}
	// Two batches of four buckets, two lines each; a short event's last
	// batch repeats its first line rather than computing an address again.
	for lo := i; lo < min(i+2*prefetchBatch, len(blocks)); lo += 4 {
		n := min(4, len(blocks)-lo)
		for j := range n {
			b := m.bucketAddr(blocks[lo+j].BlockHash)
			lines[2*j], lines[2*j+1] = b, unsafe.Add(b, 64)
		}
		for j := 2 * n; j < len(lines); j++ {
			lines[j] = lines[0]
		}
		prefetch8(&lines)
	}
}

// bind records that worker wi holds block b under external hash x, which
// names no block of wi. The worker's names stay one-to-one with the
// blocks it holds by name: a block it held under another name is renamed,
// one it held without a name gets x. (A name that named another block was
// taken from it first: see ghost.) at is where find placed x, or -1.
func (t *tree) bind(wi uint32, b blockRef, x uint64, at int) {
	ws := &t.workers[wi]
	ks := t.nameKeys(wi)
	id, off := t.runAt(b)
	if c := t.runs.at(id).cut(wi); c > off {
		if t.isGhost(wi, b) {
			delete(ws.ghosts, b)
		} else {
			ws.lookup.del(t.name(b, wi), &ks)
			delete(t.aliases, aliasKey{b, wi})
		}
		at = -1 // the lookup changed
	} else {
		if c < off {
			// wi holds the block before b only if it is in another run
			// (a store always walks down from a block it holds), so this
			// is a defence: b starts a run of its own, which wi's
			// prefix can reach.
			t.split(id, off)
			off = 0
		}
		t.runs.at(id).setCut(wi, off+1)
	}
	v := uint64(b)
	if x != t.extOf(b) {
		// Before the insert: a lookup reads a slot's alias back.
		t.runs.at(id).flags |= runAlias
		t.aliases[aliasKey{b, wi}] = x
		v |= slotAliased
	}
	if !ws.lookup.insertAt(at, x, v) {
		ws.lookup.put(x, v, &ks)
	}
}
