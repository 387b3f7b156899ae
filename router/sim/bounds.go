package sim

import (
	"github.com/kvhash/kvhash/core"
)

// Bounds are the prefix hit rates no policy over the fleet can beat: one
// cache of unbounded size, and one LRU cache holding the whole fleet's
// blocks (N separate caches of the same total size cannot hold more of
// what is reused than one pooled cache). Rates are prompt tokens served
// from cache over all prompt tokens, counted as an engine counts them
// (whole blocks, the last prompt token always computed).
type Bounds struct {
	InfiniteHitRate   float64 `json:"infinite_hit_rate"`
	PooledLRUHitRate  float64 `json:"pooled_lru_hit_rate"`
	PooledLRUCapacity int     `json:"pooled_lru_blocks"`
	// PooledLRUMissTokens: the prompt tokens the pooled cache does not
	// hold, which any router must have prefilled (OfferedWorkRate).
	PooledLRUMissTokens int `json:"pooled_lru_miss_tokens"`
}

// ComputeBounds replays the trace's prompts, in arrival order, through
// both caches at the engines' block size.
func ComputeBounds(t Trace, blockSize, capacityBlocks int) (Bounds, error) {
	inf := map[uint64]struct{}{}
	lru := newBlockLRU(capacityBlocks)
	var prompt, infHit, lruHit int
	var toks []uint32
	var local, seq []uint64
	for _, i := range arrivalOrder(t.Requests) {
		q := &t.Requests[i]
		toks = appendTokens(toks[:0], q)
		var err error
		local, err = core.AppendBlockHashes(local[:0], toks, blockSize, core.Options{})
		if err != nil {
			return Bounds{}, err
		}
		seq = core.AppendSequenceHashes(seq[:0], local)
		limit := (q.InputLength - 1) / blockSize
		prompt += q.InputLength
		infHit += blockSize * prefixLen(seq[:limit], func(h uint64) bool { _, ok := inf[h]; return ok })
		lruHit += blockSize * prefixLen(seq[:limit], lru.has)
		for _, h := range seq {
			inf[h] = struct{}{}
		}
		// Deepest first, so the prefix is the most recent and is evicted
		// last (as an engine's free queue orders a request's blocks).
		for k := len(seq) - 1; k >= 0; k-- {
			lru.touch(seq[k])
		}
	}
	return Bounds{
		InfiniteHitRate:   float64(infHit) / float64(prompt),
		PooledLRUHitRate:  float64(lruHit) / float64(prompt),
		PooledLRUCapacity: capacityBlocks, PooledLRUMissTokens: prompt - lruHit,
	}, nil
}

func prefixLen(seq []uint64, has func(uint64) bool) int {
	for i, h := range seq {
		if !has(h) {
			return i
		}
	}
	return len(seq)
}

// blockLRU is an LRU set of block hashes over a fixed array (no
// allocation per touch once full).
type blockLRU struct {
	capacity   int
	at         map[uint64]int32
	nodes      []lruNode
	head, tail int32 // head: most recent; -1: empty
}

type lruNode struct {
	hash       uint64
	prev, next int32
}

func newBlockLRU(capacity int) *blockLRU {
	return &blockLRU{capacity: max(1, capacity), at: map[uint64]int32{}, head: -1, tail: -1}
}

func (l *blockLRU) has(h uint64) bool { _, ok := l.at[h]; return ok }

// touch makes h the most recent, adding it (and evicting the least
// recent when full) if absent.
func (l *blockLRU) touch(h uint64) {
	if i, ok := l.at[h]; ok {
		l.unlink(i)
		l.pushFront(i)
		return
	}
	var i int32
	if len(l.nodes) < l.capacity {
		i = int32(len(l.nodes))
		l.nodes = append(l.nodes, lruNode{})
	} else {
		i = l.tail
		l.unlink(i)
		delete(l.at, l.nodes[i].hash)
	}
	l.nodes[i].hash = h
	l.at[h] = i
	l.pushFront(i)
}

func (l *blockLRU) unlink(i int32) {
	n := &l.nodes[i]
	if n.prev >= 0 {
		l.nodes[n.prev].next = n.next
	} else {
		l.head = n.next
	}
	if n.next >= 0 {
		l.nodes[n.next].prev = n.prev
	} else {
		l.tail = n.prev
	}
}

func (l *blockLRU) pushFront(i int32) {
	l.nodes[i].prev, l.nodes[i].next = -1, l.head
	if l.head >= 0 {
		l.nodes[l.head].prev = i
	}
	l.head = i
	if l.tail < 0 {
		l.tail = i
	}
}
