package core

import (
	"math/bits"
	"sync/atomic"
)

// blockPool recycles the arrays of dead segments. An engine's cache
// evicts blocks as fast as it stores them, so a router frees a segment's
// arrays about as often as it needs new ones; handing them straight back,
// as malloc would, instead of leaving them to the garbage collector keeps
// the heap near its live size: no collection cycles for them, and no
// fresh pages to fault in (which cost as much as the index work itself in
// a process that has just started). Arrays come in capacities of
// 2^k and 3*2^(k-1) blocks (a third wasted at worst, not a half), one free
// list each; what the lists hold is bounded by a share of the live blocks,
// and the rest is left to the collector.
type blockPool struct {
	// free is allocated at the first array handed back: an empty index
	// must stay small (a WASM instance holds tens of thousands).
	free   *[blockClasses][]blockArrays
	pooled uint64 // blocks of capacity on the free lists
	// spare is arrays a store's writer made before taking the index's
	// lock (Index.spareFor), for the next segment that finds its class's
	// free list empty; wantSpare asks for them, read without the lock: a
	// growing index, whose free lists are empty, allocates its segments'
	// arrays outside the lock, where the allocator's and the garbage
	// collector's costs (a sweep, an assist, the start of a cycle: hundreds
	// of microseconds at times) hold no query up.
	spare     blockArrays
	wantSpare atomic.Bool
}

// blockArrays are a segment's two arrays, of equal capacity.
type blockArrays struct{ locals, exts []uint64 }

const (
	blockClassMin = 8 // the smallest arrays hold 8 blocks
	blockClasses  = 64
)

// blockClass returns the class of the smallest array with room for n
// blocks, and its capacity.
func blockClass(n int) (class, size int) {
	if n <= blockClassMin {
		return 0, blockClassMin
	}
	k := bits.Len(uint(n - 1)) // 2^(k-1) < n <= 2^k
	if three := 3 << (k - 2); three >= n {
		return 2*k - 7, three
	}
	return 2*k - 6, 1 << k
}

// get returns empty arrays with room for at least n blocks: from the free
// list of their class, else the spare when it is of that class or the
// next (not much larger), else new ones.
func (p *blockPool) get(n int) blockArrays {
	c, size := blockClass(n)
	if p.free != nil {
		if k := len(p.free[c]); k > 0 {
			a := p.free[c][k-1]
			p.free[c] = p.free[c][:k-1]
			p.pooled -= uint64(size)
			return a
		}
	}
	if p.pooled < spareDry {
		// The free lists are all but empty: the index is growing, and
		// its writers make the next arrays outside the lock. (An index
		// whose blocks turn over keeps its free lists stocked, and one
		// class run dry now and then is not worth an array made for
		// every store.)
		p.wantSpare.Store(true)
	}
	if s := cap(p.spare.locals); s >= size && s <= 2*size {
		a := p.spare
		p.spare = blockArrays{}
		return a
	}
	return blockArrays{make([]uint64, 0, size), make([]uint64, 0, size)}
}

// spareDry is the capacity on the free lists (in blocks) below which a
// get that allocates asks for a spare.
const spareDry = 4096

// spareMin is the smallest store (in blocks) whose writer makes spare
// arrays: a shorter one's cost little to allocate under the lock.
const spareMin = 32

// makeSpare returns new arrays for a store of n more blocks, when the
// pool asked for them; none otherwise. It needs no lock.
func (p *blockPool) makeSpare(n int) blockArrays {
	if n < spareMin || !p.wantSpare.Load() {
		return blockArrays{}
	}
	_, size := blockClass(n)
	return blockArrays{make([]uint64, 0, size), make([]uint64, 0, size)}
}

// holdSpare keeps a as the spare (replacing one not taken, which goes to
// the free lists), under the lock.
func (p *blockPool) holdSpare(a blockArrays, limit uint64) {
	if a.locals == nil {
		return
	}
	if p.spare.locals != nil {
		p.put(p.spare, limit)
	}
	p.spare = a
	p.wantSpare.Store(false)
}

// put takes back arrays from get, unless the free lists already hold
// limit blocks of capacity.
func (p *blockPool) put(a blockArrays, limit uint64) {
	n := cap(a.locals)
	c, size := blockClass(n)
	if n != size || p.pooled+uint64(n) > limit {
		return // not from get (or the lists are full)
	}
	if p.free == nil {
		p.free = new([blockClasses][]blockArrays)
	}
	p.free[c] = append(p.free[c], blockArrays{a.locals[:0], a.exts[:0]})
	p.pooled += uint64(n)
}

// poolLimit bounds the pool: an eighth of the live blocks, or 64k blocks
// (1 MiB) for a small index.
func (t *tree) poolLimit() uint64 { return max(t.live/8, 1<<16) }

// grow gives segment sid room for n more blocks: the next class up (a
// third or a half as much again), or more when n needs it (a store that
// extends a run knows how many blocks it brings: one copy, not one per
// class on the way). Growing by the class, not by half again and two
// classes up, copies a growing run's blocks more often and leaves less
// room unused at the end: copying a block costs less than the page
// faults of its unused room in a process whose heap is still growing,
// as measured on the replayed traces (a tenth less memory per block,
// as fast).
func (t *tree) grow(sid uint32, n int) {
	s := t.segs.at(sid)
	a := t.pool.get(max(cap(s.locals)+cap(s.locals)/4+1, len(s.locals)+n))
	a.locals = append(a.locals, s.locals...)
	a.exts = append(a.exts, s.exts...)
	t.pool.put(blockArrays{s.locals, s.exts}, t.poolLimit())
	s.locals, s.exts = a.locals, a.exts
	t.refreshSegment(sid)
}

// appendBlock appends block (l, x) at the end of segment sid, with room
// for n blocks in all from it (n >= 1) if the segment must grow.
func (t *tree) appendBlock(sid uint32, l, x uint64, n int) {
	s := t.segs.at(sid)
	if len(s.locals) == cap(s.locals) {
		t.grow(sid, n)
	}
	s.locals = append(s.locals, l)
	s.exts = append(s.exts, x)
}
