package core

import "slices"

// How a removal event is applied, and a run's tail eaten in one pass.

// leave makes worker wi let go of block b (not of its name, which the
// caller drops). The blocks wi holds after b in b's run stay held: the
// run is split after b if they exist. A block nobody holds is dropped,
// and the runs below it are detached.
func (t *tree) leave(wi uint32, b blockRef) {
	id, off := t.runAt(b)
	r := t.runs.at(id)
	if r.flags&runAlias != 0 {
		delete(t.aliases, aliasKey{b, wi})
	}
	if g := t.workers[wi].ghosts; len(g) > 0 {
		delete(g, b)
	}
	k := r.holderIndex(wi)
	if off == 0 && len(r.holders) == 1 && r.holders[0].cut > 1 {
		// wi alone holds the run and lets go of its first block, keeping
		// the rest (an eviction from the head): the block is dropped and
		// the rest becomes a detached run, without a split.
		t.dropFirst(id)
		return
	}
	if r.holders[k].cut > off+1 {
		id = t.split(id, off+1)
		r = t.runs.at(id)
		k = r.holderIndex(wi)
	}
	// wi holds the run up to b, its last held block: let go of b.
	if off == 0 {
		r.holders = slices.Delete(r.holders, k, k+1)
	} else {
		r.holders[k].cut = off
	}
	if off+1 == r.len() && r.maxCut() == off {
		t.dropLast(id)
	}
}

func (t *tree) removed(w Worker, _ uint64, hashes []uint64, r *report) {
	wi := t.intern(w)
	lookup := &t.workers[wi].lookup
	ks := t.nameKeys(wi)
	for i := 0; i < prefetchDistance; i += 2 * prefetchBatch {
		prefetchNames(lookup, hashes, i)
	}
	var tail tailEater
	for i, h := range hashes {
		if i%(2*prefetchBatch) == 0 {
			prefetchNames(lookup, hashes, i+prefetchDistance)
		}
		guess, guessName := tail.next()
		v, ok := lookup.take(h, &ks, guess, guessName)
		if !ok {
			t.violation(wi, r, ViolationBlockNotFound, h, 0)
			continue
		}
		b := blockRef(v &^ slotAliased)
		if tail.eats(b) {
			continue
		}
		tail.flush(t)
		t.leave(wi, b)
		tail.start(t, wi, b)
	}
	tail.flush(t)
}

// tailEater is removed's fast path for what engines do most: evict a
// prompt's blocks from the last one back. Once a removal has left a run
// that worker wi alone holds, by name, with no alias, each next removal of
// the run's new last block does what leave would (drop that block: wi's
// cut and the run one shorter, the segment's arrays too when the run ends
// them) and is only counted; flush applies the count.
type tailEater struct {
	id    uint32   // the run; 0 (the root) when there is none
	seg   uint32   // its segment
	exts  []uint64 // the segment's names, from position base
	base  uint32
	lo    uint32 // its start: the eater stops there
	hi    uint32 // its end, as the blocks eaten leave it
	eaten uint32 // blocks eaten since the last flush
	tail  bool   // the run ends its segment's arrays
}

// start sets the eater up after leave(wi, b), when b's run is left as
// above.
func (e *tailEater) start(t *tree, wi uint32, b blockRef) {
	s := t.segs.at(b.seg())
	if len(s.runs) == 0 || b.pos() < s.runs[0].lo || len(t.workers[wi].ghosts) > 0 {
		return
	}
	id, off := t.runAt(b)
	r := t.runs.at(id)
	if off != r.len() || len(r.holders) != 1 || r.holders[0].wi != wi || r.flags&runAlias != 0 {
		return
	}
	*e = tailEater{id: id, seg: r.seg, exts: s.exts, base: s.base, lo: r.lo, hi: r.hi, tail: r.hi == s.end()}
}

// next returns the block the eater would eat next and its name (the
// run has no alias: its own external hash), which the removal's name
// lookup checks a candidate against without reading the segment; noRef
// when it eats nothing.
func (e *tailEater) next() (blockRef, uint64) {
	if e.id == 0 || e.hi == e.lo {
		return noRef, 0
	}
	return mkRef(e.seg, e.hi-1), e.exts[e.hi-1-e.base]
}

// eats reports whether removing b is dropping the run's last block, and
// if so counts it.
func (e *tailEater) eats(b blockRef) bool {
	if e.id == 0 || e.hi == e.lo || b != mkRef(e.seg, e.hi-1) {
		return false
	}
	e.hi--
	e.eaten++
	return true
}

// flush applies the blocks eaten, and stops eating.
func (e *tailEater) flush(t *tree) {
	if e.eaten > 0 {
		r := t.runs.at(e.id)
		t.live -= uint64(e.eaten)
		r.hi = e.hi
		if r.hi == r.lo {
			r.holders = r.holders[:0]
			t.freeRun(e.id)
		} else {
			r.holders[0].cut = r.len()
			if s := t.segs.at(e.seg); e.tail {
				s.locals = s.locals[:r.hi-s.base]
				s.exts = s.exts[:r.hi-s.base]
				if cap(s.locals) >= segmentTrimMin && 4*len(s.locals) <= cap(s.locals) {
					t.trimSegment(e.seg)
				}
			}
		}
	}
	*e = tailEater{}
}
