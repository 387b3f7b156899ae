package core

import (
	"fmt"
	"slices"
	"unsafe"
)

// The tree is path-compressed. A run is one node of it: a chain of blocks
// in which every block but the last has exactly one child, the next block
// of the run; the runs below a run hang off its last block. Its blocks'
// local and external hashes lie side by side in a segment, so matching a
// prompt against a run is one tight compare of two arrays, and a store of
// a long prompt writes two arrays instead of linking a node per block.
//
// Who holds a run's blocks is kept per run, not per block: each holder
// holds a prefix of the run, [0, cut). A worker always stores a block
// under one it holds, and engines evict a prompt's tail before its prefix,
// so prefixes are what workers hold; a removal that would leave a hole in
// a worker's prefix splits the run there instead. The run's length is its
// largest cut: its last block is always held.
//
// A block is named by a blockRef: its segment and its position there.
// Splitting a run leaves its blocks where they are (the two runs share the
// segment), so a ref stays valid for the block's whole life, and the
// worker name tables, ghosts and aliases, which hold refs, never need
// updating when the tree's shape changes.

// blockRef is a block's segment (high 32 bits, never 0) and position.
type blockRef uint64

const (
	// rootRef stands for the root, which holds no block; no name table
	// or ghost ever holds it.
	rootRef blockRef = 0
	// noRef is "no block".
	noRef blockRef = ^blockRef(0)
)

// maxSegments bounds the segments alive at once, maxPositions the
// positions of one: a name table's slot keeps other bits beside a block
// ref (slotMeta). Neither is near: 2^28 segments hold 2^28 runs or more
// (tens of gigabytes of index), and a run extended up to maxPositions
// goes on in a new segment (canExtend, appendFresh).
const (
	maxSegments  = 1 << 28
	maxPositions = 1 << 28
)

func mkRef(seg, pos uint32) blockRef { return blockRef(seg)<<32 | blockRef(pos) }

func (b blockRef) seg() uint32 { return uint32(b >> 32) }
func (b blockRef) pos() uint32 { return uint32(b) }

// blockSegment is the storage of one or more runs: the blocks of a store,
// and those appended to it later, at consecutive positions.
type blockSegment struct {
	base   uint32   // position of locals[0] and exts[0]
	locals []uint64 // local hashes by position - base
	exts   []uint64 // external hashes: the name of the first worker that stored the block
	// runs lists the runs over this segment by position: each covers
	// [lo, runs[id].hi), in order, without overlap. Dead blocks may lie
	// between them.
	runs []segRun
}

type segRun struct{ lo, id uint32 }

// end is the position after the segment's last stored block.
func (s *blockSegment) end() uint32 { return s.base + uint32(len(s.locals)) }

const (
	rootRun uint32 = 0
	noRun   uint32 = ^uint32(0)

	// childMapMin is the child count above which a run indexes its
	// children in a hash table rather than scanning its sibling list.
	childMapMin = 8
)

// Run flags.
const (
	// runAlias: some holder names some block of the run with an
	// external hash other than the block's own (see tree.aliases).
	runAlias uint8 = 1 << iota
	// runLive: the run is in use (not on the free list).
	runLive
	// runCounted: a root child counted in the root filter being rebuilt,
	// when it equals rootFilter.counted.
	runCounted
)

// holder is a worker holding the first cut blocks of a run.
type holder struct{ wi, cut uint32 }

type run struct {
	key uint64 // local hash of the first block: the run's key under its parent
	// lp points at the first block's local hash in its segment's array,
	// so that a match reads a run's hashes without a stop at the segment
	// (refreshSegment keeps it right when the array moves).
	lp     *uint64
	seg    uint32
	lo, hi uint32 // its blocks are at positions [lo, hi) of seg
	// parent is the run whose last block is this run's first block's
	// parent: rootRun at the root, noRun for a detached run (its first
	// block's parent was dropped) or a free one.
	parent     uint32
	firstChild uint32
	next, prev uint32 // siblings; next links the free list too
	childMap   uint32 // 0: none; else index into tree.childMaps
	kids       uint16 // children, while childMap is 0
	flags      uint8
	holders    []holder // sorted by worker index; cuts in [1, len], the largest len
}

func (r *run) len() uint32 { return r.hi - r.lo }

// holderIndex returns the index of worker wi in r.holders, or -1.
func (r *run) holderIndex(wi uint32) int {
	hs := r.holders
	if len(hs) <= 8 {
		for i := range hs {
			if hs[i].wi == wi {
				return i
			}
		}
		return -1
	}
	i, ok := slices.BinarySearchFunc(hs, wi, func(h holder, wi uint32) int { return int(h.wi) - int(wi) })
	if !ok {
		return -1
	}
	return i
}

// cut returns how many of r's blocks worker wi holds (a prefix).
func (r *run) cut(wi uint32) uint32 {
	if i := r.holderIndex(wi); i >= 0 {
		return r.holders[i].cut
	}
	return 0
}

// setCut makes worker wi hold r's first c blocks (none: c == 0).
func (r *run) setCut(wi, c uint32) {
	i, found := slices.BinarySearchFunc(r.holders, wi, func(h holder, wi uint32) int { return int(h.wi) - int(wi) })
	switch {
	case found && c == 0:
		r.holders = slices.Delete(r.holders, i, i+1)
	case found:
		r.holders[i].cut = c
	case c > 0:
		r.holders = slices.Insert(r.holders, i, holder{wi, c})
	}
}

// maxCut is the largest cut: the run's length, unless a holder just let
// go of its last block.
func (r *run) maxCut() uint32 {
	m := uint32(0)
	for _, h := range r.holders {
		m = max(m, h.cut)
	}
	return m
}

// locals returns the local hashes of r's blocks.
func (r *run) locals() []uint64 { return unsafe.Slice(r.lp, r.len()) }

// refreshSegment points the runs of segment sid at its arrays again, after
// they moved.
func (t *tree) refreshSegment(sid uint32) {
	s := t.segs.at(sid)
	for _, e := range s.runs {
		t.runs.at(e.id).lp = &s.locals[e.lo-s.base]
	}
}

func (t *tree) localOf(b blockRef) uint64 {
	s := t.segs.at(b.seg())
	return s.locals[b.pos()-s.base]
}

func (t *tree) extOf(b blockRef) uint64 {
	s := t.segs.at(b.seg())
	return s.exts[b.pos()-s.base]
}

// runAt returns the run holding block b and b's offset in it.
func (t *tree) runAt(b blockRef) (id, off uint32) {
	dir := t.segs.at(b.seg()).runs
	p := b.pos()
	if len(dir) == 1 {
		return dir[0].id, p - dir[0].lo
	}
	i, found := slices.BinarySearchFunc(dir, p, func(e segRun, p uint32) int { return int(e.lo) - int(p) })
	if !found {
		i--
	}
	return dir[i].id, p - dir[i].lo
}

// first and last return the refs of r's first and last blocks.
func (r *run) first() blockRef { return mkRef(r.seg, r.lo) }
func (r *run) last() blockRef  { return mkRef(r.seg, r.hi-1) }

// newSegment returns a new empty segment with room for n blocks.
func (t *tree) newSegment(n int) uint32 {
	var id uint32
	if k := len(t.freeSegs); k > 0 {
		id = t.freeSegs[k-1]
		t.freeSegs = t.freeSegs[:k-1]
	} else {
		if t.segs.len() >= maxSegments {
			// Tens of gigabytes of index (a segment holds a run of one block
			// or more): the process is out of memory in all but name.
			panic(fmt.Sprintf("kvhash: the index holds %d block runs at once, the most it can", maxSegments))
		}
		id = t.segs.push(blockSegment{})
	}
	a := t.pool.get(n)
	// A free segment keeps its run directory's array for the next.
	*t.segs.at(id) = blockSegment{locals: a.locals, exts: a.exts, runs: t.segs.at(id).runs[:0]}
	return id
}

// newRun takes a run from the free list or the end of t.runs. A *run
// from t.runs.at(i) is valid only until the next newRun.
func (t *tree) newRun() uint32 {
	var id uint32
	if t.runFree != noRun {
		id = t.runFree
		t.runFree = t.runs.at(id).next
	} else {
		id = t.runs.push(run{})
	}
	// A free run keeps its holders' array for the next (runs come and go
	// with every prompt an engine stores and evicts).
	*t.runs.at(id) = run{parent: noRun, firstChild: noRun, next: noRun, prev: noRun, flags: runLive,
		holders: t.runs.at(id).holders[:0]}
	return id
}

// startRun makes a run of one new block (x, l) in a new segment with
// room for n blocks, detached and held by nobody yet.
func (t *tree) startRun(x, l uint64, n int) uint32 {
	sid := t.newSegment(n)
	id := t.newRun()
	t.appendBlock(sid, l, x, 1)
	s := t.segs.at(sid)
	s.runs = append(s.runs, segRun{lo: 0, id: id})
	r := t.runs.at(id)
	r.key, r.seg, r.lo, r.hi = l, sid, 0, 1
	r.lp = &s.locals[0]
	t.live++
	return id
}

// canExtend reports whether a block can be appended to run id in place:
// it has no child and ends its segment, which has positions left.
func (t *tree) canExtend(id uint32) bool {
	r := t.runs.at(id)
	if id == rootRun || r.firstChild != noRun {
		return false
	}
	s := t.segs.at(r.seg)
	return r.hi == s.end() && s.runs[len(s.runs)-1].id == id && r.hi < t.maxPositions()
}

// maxPositions is a segment's positions: maxPositions, or fewer for a
// test of what happens at the end (positionLimit).
func (t *tree) maxPositions() uint32 {
	if t.positionLimit != 0 {
		return t.positionLimit
	}
	return maxPositions
}

// extend appends block (x, l), held by nobody yet, to run id, the first
// of n blocks the store brings (the segment grows once for them all).
func (t *tree) extend(id uint32, x, l uint64, n int) blockRef {
	r := t.runs.at(id)
	t.appendBlock(r.seg, l, x, n)
	r.hi++
	t.live++
	return r.last()
}

// split cuts run id before its block at offset p (0 < p < len) and
// returns the new run holding the first p blocks. Run id keeps the rest,
// its children and its ids in the segment's later positions; the new run
// takes id's place under id's parent, and id becomes its only child.
// Holders keep what they held. Nothing moves in the segment, so every
// blockRef stays valid.
func (t *tree) split(id, p uint32) uint32 {
	pid := t.newRun()
	r, pr := t.runs.at(id), t.runs.at(pid)
	pr.key, pr.seg, pr.lo, pr.hi, pr.lp = r.key, r.seg, r.lo, r.lo+p, r.lp
	pr.flags = r.flags
	pr.holders = slices.Grow(pr.holders[:0], len(r.holders))
	kept := r.holders[:0]
	for _, h := range r.holders {
		pr.holders = append(pr.holders, holder{h.wi, min(h.cut, p)})
		if h.cut > p {
			kept = append(kept, holder{h.wi, h.cut - p})
		}
	}
	clear(r.holders[len(kept):])
	r.holders = kept
	r.lo += p
	r.lp = (*uint64)(unsafe.Add(unsafe.Pointer(r.lp), 8*p))
	r.key = *r.lp

	// pid replaces id in id's parent's children, under the same key.
	pr.parent, pr.prev, pr.next = r.parent, r.prev, r.next
	if r.parent != noRun {
		par := t.runs.at(r.parent)
		if r.prev != noRun {
			t.runs.at(r.prev).next = pid
		} else {
			par.firstChild = pid
		}
		if r.next != noRun {
			t.runs.at(r.next).prev = pid
		}
		if par.childMap != 0 {
			t.childMaps[par.childMap].put(pr.key, uint64(pid))
		}
		if r.parent == rootRun {
			t.rootReplaced(id, pid)
		}
	}
	r.parent, r.prev, r.next = pid, noRun, noRun
	pr.firstChild, pr.kids = id, 1

	s := t.segs.at(pr.seg)
	i, _ := slices.BinarySearchFunc(s.runs, pr.lo, func(e segRun, p uint32) int { return int(e.lo) - int(p) })
	s.runs[i].lo = r.lo
	s.runs = slices.Insert(s.runs, i, segRun{lo: pr.lo, id: pid})
	t.topValid = false
	return pid
}

// shrink drops the blocks of run id past its largest cut, which nobody
// holds any more; a run left with no block is freed.
func (t *tree) shrink(id uint32) {
	r := t.runs.at(id)
	m := r.maxCut()
	if m == r.len() {
		return
	}
	t.detachChildren(id)
	r = t.runs.at(id)
	t.live -= uint64(r.len() - m)
	r.hi = r.lo + m
	if m == 0 {
		t.freeRun(id)
		return
	}
	t.trimSegment(r.seg)
}

// dropLast drops run id's last block, which nobody holds any more: the
// common end of an eviction, one block of the shrink above.
func (t *tree) dropLast(id uint32) {
	if t.runs.at(id).firstChild != noRun {
		t.detachChildren(id)
	}
	r := t.runs.at(id)
	r.hi--
	t.live--
	if r.hi == r.lo {
		t.freeRun(id)
		return
	}
	if s := t.segs.at(r.seg); r.hi+1 == s.end() {
		s.locals = s.locals[:len(s.locals)-1]
		s.exts = s.exts[:len(s.exts)-1]
		if cap(s.locals) >= segmentTrimMin && 4*len(s.locals) <= cap(s.locals) {
			t.trimSegment(r.seg)
		}
	}
}

// dropFirst drops run id's first block, which its only holder let go of
// while keeping the rest: the rest, its parent gone, is detached.
func (t *tree) dropFirst(id uint32) {
	t.unlink(id)
	r := t.runs.at(id)
	s := t.segs.at(r.seg)
	i, _ := slices.BinarySearchFunc(s.runs, r.lo, func(e segRun, p uint32) int { return int(e.lo) - int(p) })
	r.lo++
	s.runs[i].lo = r.lo
	r.lp = (*uint64)(unsafe.Add(unsafe.Pointer(r.lp), 8))
	r.key = *r.lp
	r.holders[0].cut--
	t.live--
	t.topValid = false
	if i == 0 && cap(s.locals) >= segmentTrimMin && 4*int(s.end()-r.lo) <= cap(s.locals) {
		t.trimSegment(r.seg)
	}
}

// freeRun frees run id, which holds no block and has no child.
func (t *tree) freeRun(id uint32) {
	t.unlink(id)
	r := t.runs.at(id)
	sid := r.seg
	s := t.segs.at(sid)
	i, _ := slices.BinarySearchFunc(s.runs, r.lo, func(e segRun, p uint32) int { return int(e.lo) - int(p) })
	s.runs = slices.Delete(s.runs, i, i+1)
	*r = run{parent: noRun, firstChild: noRun, prev: noRun, next: t.runFree, holders: r.holders[:0]}
	t.runFree = id
	t.topValid = false
	if len(s.runs) == 0 {
		t.pool.put(blockArrays{s.locals, s.exts}, t.poolLimit())
		*t.segs.at(sid) = blockSegment{runs: s.runs[:0]}
		t.freeSegs = append(t.freeSegs, sid)
		return
	}
	t.trimSegment(sid)
}

// segmentTrimMin is the smallest segment whose memory trimSegment gives
// back: below it, copying costs more than it frees.
const segmentTrimMin = 64

// trimSegment gives back a segment's memory at its ends once its runs
// cover at most a quarter of it: the blocks before its first run and
// after its last are dead. (A quarter, not a half: engines evict a
// prompt's tail a block at a time, and each trim copies what is left.)
// Positions do not change (base moves with the first block kept), so no
// ref does.
func (t *tree) trimSegment(sid uint32) {
	s := t.segs.at(sid)
	lo, hi := s.runs[0].lo, t.runs.at(s.runs[len(s.runs)-1].id).hi
	if hi < s.end() {
		s.locals = s.locals[:hi-s.base]
		s.exts = s.exts[:hi-s.base]
	}
	if used := hi - lo; cap(s.locals) >= segmentTrimMin && 4*int(used) <= cap(s.locals) {
		a := t.pool.get(int(used))
		a.locals = append(a.locals, s.locals[lo-s.base:]...)
		a.exts = append(a.exts, s.exts[lo-s.base:]...)
		t.pool.put(blockArrays{s.locals, s.exts}, t.poolLimit())
		s.locals, s.exts, s.base = a.locals, a.exts, lo
		t.refreshSegment(sid)
	}
}
