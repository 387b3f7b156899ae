package core

import (
	"math/bits"
	"slices"
	"sync/atomic"
)

// matchScratch is one reader's reusable memory, so that a match
// allocates nothing once warm.
type matchScratch struct {
	active  []uint64 // bitset of workers still matching
	small   []uint32 // the same, as a list, once at most three remain
	scored  []scored // workers with their final scores
	byIndex []uint32 // score by worker index, for output in worker order
}

// scratchSlots hands each concurrent reader its own matchScratch. Unlike
// sync.Pool it never drops memory (the race detector makes a Pool drop
// items at random), so "no allocation" holds in every build. Readers
// beyond the slots get a fresh scratch.
type scratchSlots struct {
	slots [scratchSlotCount]scratchSlot
}

const scratchSlotCount = 16

type scratchSlot struct {
	busy atomic.Bool
	sc   matchScratch
	_    [64]byte // keep slots on separate cache lines
}

// get takes the first free slot: a lone reader always reuses slot 0,
// whose memory is warm.
func (s *scratchSlots) get() (*matchScratch, int) {
	for k := range scratchSlotCount {
		if s.slots[k].busy.CompareAndSwap(false, true) {
			return &s.slots[k].sc, k
		}
	}
	return new(matchScratch), -1
}

func (s *scratchSlots) put(k int) {
	if k >= 0 {
		s.slots[k].busy.Store(false)
	}
}

type scored struct{ wi, score uint32 }

// appendMatches walks the query from the root. The workers holding the
// first block start active; at each next block the active set is
// intersected with the block's holders, and a worker that drops out
// scores the depth reached. Sets of more than three workers intersect as
// bitsets, smaller ones as lists.
//
// With earlyExit the walk does what Dynamo 1.6.1's does (found with its
// wheel): once a single worker is left it goes on counting that worker's
// blocks along the query, and stops only at a node with more than one
// child, where it scores the depth reached.
func (t *tree) appendMatches(dst []Match, q []uint64, earlyExit bool, sc *matchScratch) []Match {
	cur := t.child(rootNode, q[0])
	if cur == noNode {
		return dst
	}
	sc.scored = sc.scored[:0]
	set := t.node(cur).set
	depth := uint32(1)
	useBits := set.n > 3
	var count uint32
	if useBits {
		sc.active = append(sc.active[:0], set.bitset(&t.bitsets)...)
		count = set.n
	} else {
		sc.small = append(sc.small[:0], set.w[:set.n]...)
		count = set.n
	}
	for int(depth) < len(q) {
		if count == 1 && !useBits && !earlyExit {
			// One worker left: the common case of a prompt cached on the
			// worker it was routed to. Follow its chain without the set
			// bookkeeping.
			depth = t.followOne(q, depth, cur, sc.small[0])
			break
		}
		if earlyExit && count == 1 && t.branches(cur) {
			break
		}
		next := t.child(cur, q[depth])
		if next == noNode {
			break
		}
		ns := t.node(next).set
		switch {
		case !useBits:
			kept := sc.small[:0]
			for _, wi := range sc.small {
				if ns.has(&t.bitsets, wi) {
					kept = append(kept, wi)
				} else {
					sc.scored = append(sc.scored, scored{wi, depth})
				}
			}
			sc.small = kept
			count = uint32(len(kept))
		case ns.n > 3:
			nb := ns.bitset(&t.bitsets)
			for j, a := range sc.active {
				var b uint64
				if j < len(nb) {
					b = nb[j]
				}
				if drop := a &^ b; drop != 0 {
					count -= uint32(bits.OnesCount64(drop))
					for ; drop != 0; drop &= drop - 1 {
						sc.scored = append(sc.scored, scored{uint32(j<<6 | bits.TrailingZeros64(drop)), depth})
					}
					sc.active[j] = a & b
				}
			}
		default:
			// Fewer than four holders: continue with a list.
			sc.small = sc.small[:0]
			for j, a := range sc.active {
				for ; a != 0; a &= a - 1 {
					wi := uint32(j<<6 | bits.TrailingZeros64(a))
					if ns.has(&t.bitsets, wi) {
						sc.small = append(sc.small, wi)
					} else {
						sc.scored = append(sc.scored, scored{wi, depth})
					}
				}
			}
			useBits = false
			count = uint32(len(sc.small))
		}
		if count == 0 {
			break
		}
		depth++
		cur = next
	}
	if useBits {
		for j, a := range sc.active {
			for ; a != 0; a &= a - 1 {
				sc.scored = append(sc.scored, scored{uint32(j<<6 | bits.TrailingZeros64(a)), depth})
			}
		}
	} else {
		for _, wi := range sc.small {
			sc.scored = append(sc.scored, scored{wi, depth})
		}
	}
	return t.appendScored(dst, sc)
}

// followOne walks on from node cur at depth along q while worker wi holds
// the next block, returning the depth reached. It is the match's inner
// loop for long prompts (thousands of blocks), so the child lookup and
// the membership test are written out here: a chain node has one child,
// found with one compare, and a lone worker is most often its only holder.
func (t *tree) followOne(q []uint64, depth uint32, cur, wi uint32) uint32 {
	// Node pointers are stable here: readers hold the read lock, so no
	// node page moves or is added while the walk runs. The node found as
	// the child is the next step's parent: one node load per block.
	cn := t.node(cur)
	for ; int(depth) < len(q); depth++ {
		h := q[depth]
		var next *node
		if cn.childMap != 0 {
			c, ok := t.childMaps[cn.childMap][h]
			if !ok {
				break
			}
			next = t.node(c)
		} else {
			for c := cn.firstChild; c != noNode; {
				n := t.node(c)
				if n.local == h {
					next = n
					break
				}
				c = n.next
			}
			if next == nil {
				break
			}
		}
		if s := &next.set; !(s.n == 1 && s.w[0] == wi) && !s.has(&t.bitsets, wi) {
			break
		}
		cn = next
	}
	return depth
}

// branches reports whether node n has more than one child.
func (t *tree) branches(n uint32) bool {
	c := t.node(n).firstChild
	return c != noNode && t.node(c).next != noNode
}

// appendScored appends the scored workers to dst in Worker order: by
// sorting them on their rank when they are few, by one pass over the
// sorted worker list when they are a good part of it.
func (t *tree) appendScored(dst []Match, sc *matchScratch) []Match {
	m := len(sc.scored)
	dst = slices.Grow(dst, m)
	if m <= 8 || 16*m < len(t.order) {
		s := sc.scored
		// Insertion sort by rank: the common case is one to a few workers.
		if m <= 8 {
			for i := 1; i < m; i++ {
				for j := i; j > 0 && t.rank[s[j].wi] < t.rank[s[j-1].wi]; j-- {
					s[j], s[j-1] = s[j-1], s[j]
				}
			}
		} else {
			slices.SortFunc(s, func(a, b scored) int { return int(t.rank[a.wi]) - int(t.rank[b.wi]) })
		}
		for _, e := range s {
			ws := &t.workers[e.wi]
			dst = append(dst, Match{Worker: ws.w, Score: e.score, TreeSize: ws.blocks()})
		}
		return dst
	}
	if len(sc.byIndex) < len(t.workers) {
		sc.byIndex = make([]uint32, len(t.workers))
	}
	for _, e := range sc.scored {
		sc.byIndex[e.wi] = e.score
	}
	for _, wi := range t.order {
		if s := sc.byIndex[wi]; s != 0 {
			ws := &t.workers[wi]
			dst = append(dst, Match{Worker: ws.w, Score: s, TreeSize: ws.blocks()})
			sc.byIndex[wi] = 0
		}
	}
	return dst
}
