package kvmock

import (
	"errors"
	"fmt"
)

// The KV cache model, after vLLM's block pool: a fixed number of physical
// blocks; a full block that has been computed holds its engine digest and
// can be reused by any later request whose prompt starts with the same
// blocks (prefix caching); blocks nobody references wait in an LRU free
// list and keep their digest until an allocation takes them, which evicts
// the digest (BlockRemoved). Caching a block emits BlockStored.
//
// Differences from vLLM, on purpose: a request gets all the blocks it can
// ever need (prompt + max_tokens) when it is admitted, so there is no
// preemption; and a digest is held by at most one physical block (when two
// running requests compute the same block, the second copy is not cached),
// so every BlockStored has exactly one BlockRemoved later and a router's
// index stays exact.

// physBlock is one physical KV block.
type physBlock struct {
	refs   int  // running requests using it
	cached bool // digest is valid and in Cache.byDigest
	digest Digest

	free       bool // in the free list
	prev, next *physBlock
}

// Cache is the engine's KV block pool. It is not safe for concurrent use:
// the engine serialises calls under its lock.
type Cache struct {
	blockSize int
	blocks    []physBlock
	free      freeList
	byDigest  map[Digest]*physBlock
	sink      EventSink
}

// CacheStats is a snapshot of the pool.
type CacheStats struct {
	NumBlocks    int `json:"num_blocks"`    // physical blocks
	FreeBlocks   int `json:"free_blocks"`   // referenced by no running request (cached or empty)
	CachedBlocks int `json:"cached_blocks"` // holding a digest (in use or free)
	UsedBlocks   int `json:"used_blocks"`   // referenced by a running request
}

// NewCache returns a pool of numBlocks empty blocks of blockSize tokens.
func NewCache(numBlocks, blockSize int, sink EventSink) *Cache {
	if sink == nil {
		sink = discardEvents{}
	}
	c := &Cache{
		blockSize: blockSize,
		blocks:    make([]physBlock, numBlocks),
		byDigest:  make(map[Digest]*physBlock),
		sink:      sink,
	}
	for i := range c.blocks {
		c.free.pushTail(&c.blocks[i])
	}
	return c
}

// Allocation is the blocks a running request holds: entry i backs tokens
// [i*blockSize, (i+1)*blockSize) of its sequence; the first Hits entries
// were reused from the cache.
type Allocation struct {
	blocks []*physBlock
	Hits   int
}

// ErrCacheFull means the pool cannot give the blocks now; it may later.
var ErrCacheFull = errors.New("not enough free KV blocks")

// CachedPrefix is the number of leading digests of ids the cache holds.
func (c *Cache) CachedPrefix(ids []Digest) int {
	for i, id := range ids {
		if _, ok := c.byDigest[id]; !ok {
			return i
		}
	}
	return len(ids)
}

// Allocate reuses the cached prefix of prefix (at most maxHits blocks) and
// takes fresh blocks from the head of the free list for the rest of
// totalBlocks, evicting the digests those held. With too few free blocks it
// changes nothing and returns ErrCacheFull.
func (c *Cache) Allocate(prefix []Digest, maxHits, totalBlocks int) (*Allocation, error) {
	if totalBlocks > len(c.blocks) {
		return nil, fmt.Errorf("%d blocks needed, the cache has %d in all", totalBlocks, len(c.blocks))
	}
	hits := min(c.CachedPrefix(prefix), maxHits, totalBlocks)
	// Hit blocks that sit in the free list leave it when reused, so they
	// do not count towards the fresh blocks the rest needs.
	available := c.free.n
	for _, id := range prefix[:hits] {
		if c.byDigest[id].free {
			available--
		}
	}
	if totalBlocks-hits > available {
		return nil, ErrCacheFull
	}
	a := &Allocation{blocks: make([]*physBlock, 0, totalBlocks), Hits: hits}
	for _, id := range prefix[:hits] {
		b := c.byDigest[id]
		if b.free {
			c.free.remove(b)
		}
		b.refs++
		a.blocks = append(a.blocks, b)
	}
	for len(a.blocks) < totalBlocks {
		b := c.free.popHead()
		if b.cached {
			c.evict(b)
		}
		b.refs++
		a.blocks = append(a.blocks, b)
	}
	return a, nil
}

func (c *Cache) evict(b *physBlock) {
	delete(c.byDigest, b.digest)
	b.cached = false
	c.sink.Emit(Event{Kind: EventBlockRemoved, Digests: []Digest{b.digest}})
}

// Store caches the allocation's blocks [from, from+len(ids)) under ids once
// their tokens are computed, emitting one BlockStored per run of newly
// cached blocks. parent is the digest of block from-1 (nil when from is 0);
// tokens are the blocks' tokens, blockSize each; tag names the sequence's
// LoRA adapter and salt for the events. A digest another block already
// holds is not cached twice: the run breaks there.
func (c *Cache) Store(a *Allocation, from int, ids []Digest, parent *Digest, tokens []uint32, tag SeqTag) {
	runStart := -1
	flush := func(end int) {
		if runStart < 0 {
			return
		}
		ev := Event{Kind: EventBlockStored, Digests: append([]Digest(nil), ids[runStart:end]...)}
		if runStart > 0 {
			p := ids[runStart-1]
			ev.Parent = &p
		} else if parent != nil {
			p := *parent
			ev.Parent = &p
		}
		ev.Tokens = append([]uint32(nil), tokens[runStart*c.blockSize:end*c.blockSize]...)
		ev.LoraName, ev.LoraID = tag.LoraName, tag.LoraID
		if tag.hasKeys() {
			ev.ExtraKeys = make([][]string, 0, end-runStart)
			for i := runStart; i < end; i++ {
				ev.ExtraKeys = append(ev.ExtraKeys, tag.eventKeys(from+i))
			}
		}
		c.sink.Emit(ev)
		runStart = -1
	}
	for i, id := range ids {
		b := a.blocks[from+i]
		if b.cached || c.byDigest[id] != nil {
			flush(i)
			continue
		}
		b.cached, b.digest = true, id
		c.byDigest[id] = b
		if runStart < 0 {
			runStart = i
		}
	}
	flush(len(ids))
}

// Release gives the allocation's blocks back. The last block goes into the
// free list first, so a sequence's deepest blocks are evicted before its
// shared prefix (vLLM frees in the same order).
func (c *Cache) Release(a *Allocation) {
	for i := len(a.blocks) - 1; i >= 0; i-- {
		b := a.blocks[i]
		b.refs--
		if b.refs == 0 {
			c.free.pushTail(b)
		}
	}
	a.blocks = nil
}

// ErrBlocksInUse: the prefix cache cannot be reset while requests run.
var ErrBlocksInUse = errors.New("KV blocks are in use by running requests")

// Reset drops every cached digest (vLLM's reset_prefix_cache) and emits
// AllBlocksCleared. Like vLLM it refuses while any block is in use.
func (c *Cache) Reset() error {
	if c.free.n != len(c.blocks) {
		return ErrBlocksInUse
	}
	for i := range c.blocks {
		c.blocks[i].cached = false
	}
	clear(c.byDigest)
	c.sink.Emit(Event{Kind: EventAllBlocksCleared})
	return nil
}

// Stats counts the pool's blocks.
func (c *Cache) Stats() CacheStats {
	return CacheStats{
		NumBlocks:    len(c.blocks),
		FreeBlocks:   c.free.n,
		CachedBlocks: len(c.byDigest),
		UsedBlocks:   len(c.blocks) - c.free.n,
	}
}
