package core

import (
	"slices"
	"sync/atomic"
)

// matchScratch is one reader's reusable memory, so that a match
// allocates nothing once warm.
type matchScratch struct {
	active  []uint32 // workers still matching, ascending
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

// appendMatches walks the query from the root, a run at a time. The
// holders of the first run start active. In each run the query is
// compared with the run's local hashes as one array; then the active
// workers are merged with the run's holders (both sorted): one that holds
// the whole run, when the query covers it, goes on to the next run, the
// others score the depth at which they stop holding (or the query stops
// matching).
//
// With earlyExit the walk does what Dynamo 1.6.1's does (found with its
// wheel): once a single worker is left it goes on counting that worker's
// blocks along the query, and stops only at a block with more than one
// child, where it scores the depth reached. Only a run's last block can
// have more than one child.
// id is the root's child under q[0]: the first run.
func (t *tree) appendMatches(dst []Match, q []uint64, earlyExit bool, id uint32, sc *matchScratch) []Match {
	sc.scored = sc.scored[:0]
	sc.active = sc.active[:0]
	for _, h := range t.runs.at(id).holders {
		sc.active = append(sc.active, h.wi)
	}
	d := uint32(0) // query blocks before the run
	for {
		r := t.runs.at(id)
		n := r.len()
		// The run's first block matched its key; count the rest.
		k := 1 + uint32(commonPrefix(q[d+1:], r.locals()[1:]))
		whole := k == n
		kept := sc.active[:0]
		j := 0
		for _, wi := range sc.active {
			for j < len(r.holders) && r.holders[j].wi < wi {
				j++
			}
			c := uint32(0)
			if j < len(r.holders) && r.holders[j].wi == wi {
				c = r.holders[j].cut
			}
			if whole && c == n {
				kept = append(kept, wi)
			} else {
				sc.scored = append(sc.scored, scored{wi, d + min(c, k)})
			}
		}
		sc.active = kept
		d += n
		if len(kept) == 0 || int(d) == len(q) || earlyExit && len(kept) == 1 && t.branches(id) {
			break
		}
		if id = t.childRun(id, q[d]); id == noRun {
			break
		}
	}
	for _, wi := range sc.active {
		sc.scored = append(sc.scored, scored{wi, d})
	}
	return t.appendScored(dst, sc)
}

// matchOne is appendMatches when the first run has a single holder, wi,
// the common case (a prompt cached on one worker): the only worker that
// can score, so the walk needs no worker lists (and no scratch).
func (t *tree) matchOne(dst []Match, q []uint64, earlyExit bool, id, wi uint32) []Match {
	d := uint32(0)
	for {
		r := t.runs.at(id)
		n := r.len()
		k := 1 + uint32(commonPrefix(q[d+1:], r.locals()[1:]))
		if c := r.cut(wi); k != n || c != n {
			d += min(c, k)
			break
		}
		d += n
		if int(d) == len(q) || earlyExit && t.branches(id) {
			break
		}
		if id = t.childRun(id, q[d]); id == noRun {
			break
		}
	}
	ws := &t.workers[wi]
	return append(dst, Match{Worker: ws.w, Score: d, TreeSize: ws.blocks()})
}

// commonPrefixGo returns how many leading elements a and b share,
// comparing four at a time: commonPrefix's portable form (prefix_*.go).
func commonPrefixGo(a, b []uint64) int {
	n := min(len(a), len(b))
	a, b = a[:n], b[:n]
	i := 0
	for ; i+4 <= n; i += 4 {
		if (a[i]^b[i])|(a[i+1]^b[i+1])|(a[i+2]^b[i+2])|(a[i+3]^b[i+3]) != 0 {
			break
		}
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
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
		sc.byIndex = make([]uint32, len(t.workers)) // a scratch slot's: kept for the next
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
