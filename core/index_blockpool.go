package core

import "math/bits"

// blockPool recycles the arrays of dead segments. An engine's cache
// evicts blocks as fast as it stores them, so a router frees a segment's
// arrays about as often as it needs new ones; handing them straight back,
// as malloc would, instead of leaving them to the garbage collector keeps
// the heap near its live size: no collection cycles for them, and no
// fresh pages to fault in (which cost as much as the index work itself in
// a process that has just started). Arrays come in power-of-two
// capacities, one free list each; what the lists hold is bounded by a
// share of the live blocks, and the rest is left to the collector.
type blockPool struct {
	free   [blockClasses][]blockArrays
	pooled uint64 // blocks of capacity on the free lists
}

// blockArrays are a segment's two arrays, of equal capacity.
type blockArrays struct{ locals, exts []uint64 }

const (
	blockClassMin = 3 // the smallest arrays hold 8 blocks
	blockClasses  = 33
)

// blockClass is the class of an array with room for n blocks.
func blockClass(n int) int {
	if n <= 1<<blockClassMin {
		return blockClassMin
	}
	return bits.Len(uint(n - 1))
}

// get returns empty arrays with room for at least n blocks.
func (p *blockPool) get(n int) blockArrays {
	c := blockClass(n)
	if k := len(p.free[c]); k > 0 {
		a := p.free[c][k-1]
		p.free[c] = p.free[c][:k-1]
		p.pooled -= uint64(cap(a.locals))
		return a
	}
	return blockArrays{make([]uint64, 0, 1<<c), make([]uint64, 0, 1<<c)}
}

// put takes back arrays from get, unless the free lists already hold
// limit blocks of capacity.
func (p *blockPool) put(a blockArrays, limit uint64) {
	n := cap(a.locals)
	if n == 0 || n&(n-1) != 0 || p.pooled+uint64(n) > limit {
		return
	}
	p.free[blockClass(n)] = append(p.free[blockClass(n)], blockArrays{a.locals[:0], a.exts[:0]})
	p.pooled += uint64(n)
}

// poolLimit bounds the pool: an eighth of the live blocks, or 64k blocks
// (1 MiB) for a small index.
func (t *tree) poolLimit() uint64 { return max(t.live/8, 1<<16) }

// grow gives segment sid room for one more block: twice its capacity.
func (t *tree) grow(sid uint32) {
	s := &t.segs[sid]
	a := t.pool.get(max(2*cap(s.locals), 1))
	a.locals = append(a.locals, s.locals...)
	a.exts = append(a.exts, s.exts...)
	t.pool.put(blockArrays{s.locals, s.exts}, t.poolLimit())
	s.locals, s.exts = a.locals, a.exts
}

// appendBlock appends block (l, x) at the end of segment sid.
func (t *tree) appendBlock(sid uint32, l, x uint64) {
	s := &t.segs[sid]
	if len(s.locals) == cap(s.locals) {
		t.grow(sid)
	}
	s.locals = append(s.locals, l)
	s.exts = append(s.exts, x)
}
