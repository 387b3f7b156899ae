package engine

import "math"

// maxBlocks bounds NumBlocks so that block indices fit an int32.
const maxBlocks = math.MaxInt32 - 1

const noBlock int32 = -1

// block is one physical KV block.
type block struct {
	hash       uint64
	cached     bool  // hash is valid and pool.byHash[hash] is this block
	refs       int32 // running requests using it
	free       bool  // in the free queue
	prev, next int32 // free queue links
}

// pool is the KV block pool: every block, the free queue (least recently
// freed at the head: the next to be allocated, evicting its hash), and the
// prefix cache's index from hash to block.
type pool struct {
	blocks     []block
	byHash     map[uint64]int32
	head, tail int32
	nFree      int
	// gen changes whenever byHash does: a waiting request's prefix hit,
	// computed at an earlier generation, is still valid at the same one.
	gen uint64
}

func newPool(n int) *pool {
	p := &pool{blocks: make([]block, n), byHash: make(map[uint64]int32), head: noBlock, tail: noBlock, gen: 1}
	for i := range p.blocks {
		p.pushTail(int32(i))
	}
	return p
}

func (p *pool) pushTail(i int32) {
	b := &p.blocks[i]
	b.prev, b.next, b.free = p.tail, noBlock, true
	if p.tail != noBlock {
		p.blocks[p.tail].next = i
	} else {
		p.head = i
	}
	p.tail = i
	p.nFree++
}

func (p *pool) unlink(i int32) {
	b := &p.blocks[i]
	if b.prev != noBlock {
		p.blocks[b.prev].next = b.next
	} else {
		p.head = b.next
	}
	if b.next != noBlock {
		p.blocks[b.next].prev = b.prev
	} else {
		p.tail = b.prev
	}
	b.prev, b.next, b.free = noBlock, noBlock, false
	p.nFree--
}

// touch takes a reference on cached block i (a prefix hit).
func (p *pool) touch(i int32) {
	b := &p.blocks[i]
	if b.free {
		p.unlink(i)
	}
	b.refs++
}

// alloc takes the free queue's head; if it held a hash, the hash is
// evicted and evicted reports it. The caller checked nFree > 0.
func (p *pool) alloc() (i int32, evicted uint64, wasCached bool) {
	i = p.head
	p.unlink(i)
	b := &p.blocks[i]
	if b.cached {
		evicted, wasCached = b.hash, true
		delete(p.byHash, b.hash)
		b.cached = false
		p.gen++
	}
	b.refs = 1
	return i, evicted, wasCached
}

// cache gives block i hash h, unless another block holds h already.
func (p *pool) cache(i int32, h uint64) bool {
	if _, dup := p.byHash[h]; dup {
		return false
	}
	b := &p.blocks[i]
	if b.cached { // cannot happen: a block is cached once, when computed
		return false
	}
	b.hash, b.cached = h, true
	p.byHash[h] = i
	p.gen++
	return true
}

// release drops a reference on each of blocks, last first, so that a
// sequence's deepest blocks reach the free queue's head side first and are
// evicted before its prefix.
func (p *pool) release(blocks []int32) {
	for k := len(blocks) - 1; k >= 0; k-- {
		i := blocks[k]
		b := &p.blocks[i]
		b.refs--
		if b.refs == 0 {
			p.pushTail(i)
		}
	}
}

// reset forgets every cached hash; the caller checked no block is in use.
func (p *pool) reset() {
	for i := range p.blocks {
		p.blocks[i].cached = false
	}
	clear(p.byHash)
	p.gen++
}

func (p *pool) used() int { return len(p.blocks) - p.nFree }
