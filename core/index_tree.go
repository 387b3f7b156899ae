package core

import (
	"math/bits"
	"slices"
)

// tree is the index state. Every method runs under Index.mu: the
// mutating ones under the write lock, the rest under the read lock.
type tree struct {
	pages     []*nodePage
	slots     uint32 // node ids handed out so far
	free      uint32 // head of the free node list
	live      uint64 // nodes in use, root excluded
	childMaps []map[uint64]uint32
	freeMaps  []uint32
	bitsets   bitsetPool

	// aliases holds a holder's external hash for a node when it differs
	// from node.external, keyed by aliasKey(node, worker). Healthy
	// clusters, whose engines agree on hashes, never have any.
	aliases map[uint64]uint64

	workers []wstate // by interned index
	index   map[Worker]uint32
	freeW   []uint32
	order   []uint32 // live worker indexes sorted by Worker
	rank    []uint32 // by worker index: position in order

	totals [NumViolations]uint64

	// top of the current store's chain, cached for the cycle check.
	topCache uint32
	topValid bool
	seen     hashSet // scratch for the self-reference check
}

// wstate is one worker rank: its lookup from its external hashes to the
// nodes it holds (exactly one hash per held node), and its stats.
type wstate struct {
	w          Worker
	live       bool
	unstable   bool
	lookup     nameTable
	violations [NumViolations]uint64
}

func aliasKey(n, wi uint32) uint64 { return uint64(n)<<32 | uint64(wi) }

func (t *tree) init() {
	t.free = noNode
	t.newNode(0, 0)
	t.live = 0
	t.childMaps = make([]map[uint64]uint32, 1) // index 0 means "no map"
	t.aliases = map[uint64]uint64{}
	t.index = map[Worker]uint32{}
}

// intern returns w's index, registering w if it is new.
func (t *tree) intern(w Worker) uint32 {
	if wi, ok := t.index[w]; ok {
		return wi
	}
	var wi uint32
	if k := len(t.freeW); k > 0 {
		wi = t.freeW[k-1]
		t.freeW = t.freeW[:k-1]
	} else {
		t.workers = append(t.workers, wstate{})
		t.rank = append(t.rank, 0)
		wi = uint32(len(t.workers) - 1)
	}
	t.workers[wi] = wstate{w: w, live: true}
	t.index[w] = wi
	pos, _ := slices.BinarySearchFunc(t.order, w, func(o uint32, w Worker) int { return t.workers[o].w.Compare(w) })
	t.order = slices.Insert(t.order, pos, wi)
	t.rerank(pos)
	return wi
}

// rerank refreshes the ranks of the workers from position pos of the
// sorted order on, after one joined or left there.
func (t *tree) rerank(pos int) {
	for r := pos; r < len(t.order); r++ {
		t.rank[t.order[r]] = uint32(r)
	}
}

// name returns worker wi's external hash for node n, which it holds.
func (t *tree) name(n, wi uint32) uint64 {
	nn := t.node(n)
	if nn.flags&flagAlias != 0 {
		if h, ok := t.aliases[aliasKey(n, wi)]; ok {
			return h
		}
	}
	return nn.external
}

func (t *tree) violation(wi uint32, r *report, kind Violation, hash, nodeHash uint64) {
	t.totals[kind]++
	ws := &t.workers[wi]
	ws.violations[kind]++
	if r.enforced() {
		ws.unstable = true
	}
	r.add(kind, hash, nodeHash)
}

// selfReference returns a hash that the store repeats, if any: a block
// equal to its parent or to another block of the store.
func (t *tree) selfReference(parent *uint64, blocks []StoredBlock) (uint64, bool) {
	if len(blocks) <= 16 {
		for i := range blocks {
			h := blocks[i].BlockHash
			if parent != nil && h == *parent {
				return h, true
			}
			for j := range i {
				if blocks[j].BlockHash == h {
					return h, true
				}
			}
		}
		return 0, false
	}
	seen := &t.seen
	seen.begin(len(blocks) + 1)
	if parent != nil {
		seen.add(*parent)
	}
	for i := range blocks {
		if !seen.add(blocks[i].BlockHash) {
			return blocks[i].BlockHash, true
		}
	}
	return 0, false
}

// hashSet is a scratch set of hashes for one store's self-reference
// check: linear probing over slots stamped with a generation, so that
// starting a new check is O(1) rather than a clear.
type hashSet struct {
	keys  []uint64
	stamp []uint32
	gen   uint32
	shift uint8
}

// begin empties the set, sized for n hashes.
func (s *hashSet) begin(n int) {
	size := max(32, 1<<bits.Len(uint(2*n)))
	if len(s.keys) < size {
		s.keys = make([]uint64, size)
		s.stamp = make([]uint32, size)
		s.gen = 0
	}
	s.shift = uint8(64 - bits.TrailingZeros(uint(len(s.keys))))
	s.gen++
	if s.gen == 0 { // wrapped: old stamps could look current
		clear(s.stamp)
		s.gen = 1
	}
}

// add inserts h and reports whether it was new.
func (s *hashSet) add(h uint64) bool {
	mask := len(s.keys) - 1
	k := h ^ h>>33
	k *= 0xff51afd7ed558ccd
	for i := int((k ^ k>>33) >> s.shift); ; i = (i + 1) & mask {
		if s.stamp[i] != s.gen {
			s.stamp[i], s.keys[i] = s.gen, h
			return true
		}
		if s.keys[i] == h {
			return false
		}
	}
}

func (t *tree) stored(w Worker, _ uint64, parent *uint64, blocks []StoredBlock, r *report) {
	wi := t.intern(w)
	if h, bad := t.selfReference(parent, blocks); bad {
		t.violation(wi, r, ViolationSelfReference, h, 0)
		return
	}
	cur := rootNode
	if parent != nil {
		p, ok := t.workers[wi].lookup.get(*parent)
		if !ok {
			t.violation(wi, r, ViolationParentNotFound, *parent, 0)
			return
		}
		cur = p
	}
	t.topValid = false
	lookup := &t.workers[wi].lookup
	for i := range blocks {
		x, l := blocks[i].BlockHash, blocks[i].TokensHash
		n := t.child(cur, l)
		old, named := lookup.get(x)
		switch {
		case n != noNode:
			if ext := t.node(n).external; ext != x {
				t.violation(wi, r, ViolationHashMismatch, x, ext)
			}
		case named && t.node(old).parent == noNode && old != t.chainTop(cur):
			// The worker still holds this block under a parent that was
			// dropped (it is detached): re-attach it here, as Dynamo does,
			// unless that would close a cycle.
			t.node(old).local = l
			t.link(cur, old)
			n = old
		default:
			n = t.newNode(x, l)
			t.link(cur, n)
		}
		if named && old == n {
			t.violation(wi, r, ViolationDuplicateStore, x, 0)
		} else {
			if named {
				t.release(wi, old)
			}
			t.bind(wi, n, x)
		}
		cur = n
	}
}

// chainTop returns the top of cur's ancestor chain, cached for the walk
// of one store (a store only descends, so the top stays the same until a
// node is freed).
func (t *tree) chainTop(cur uint32) uint32 {
	if !t.topValid {
		t.topCache = t.top(cur)
		t.topValid = true
	}
	return t.topCache
}

// bind records that worker wi holds node n under external hash x, which
// names no node of wi. The worker's names stay one-to-one with its nodes:
// a node it held under another name is renamed. (A name that named
// another node was released from it first: the worker leaves that node.)
func (t *tree) bind(wi, n uint32, x uint64) {
	ws := &t.workers[wi]
	nn := t.node(n)
	if nn.set.has(&t.bitsets, wi) {
		ws.lookup.del(t.name(n, wi))
		delete(t.aliases, aliasKey(n, wi))
	} else {
		nn.set.add(&t.bitsets, wi)
	}
	ws.lookup.put(x, n)
	if x != nn.external {
		nn.flags |= flagAlias
		t.aliases[aliasKey(n, wi)] = x
	}
}

// release makes worker wi leave node n; a node no worker holds is freed.
func (t *tree) release(wi, n uint32) {
	t.workers[wi].lookup.del(t.name(n, wi))
	t.leave(wi, n)
}

// leave removes wi from n's holders (not from wi's lookup).
func (t *tree) leave(wi, n uint32) {
	nn := t.node(n)
	if nn.flags&flagAlias != 0 {
		delete(t.aliases, aliasKey(n, wi))
	}
	nn.set.remove(&t.bitsets, wi)
	if nn.set.n == 0 {
		t.freeNode(n)
	}
}

func (t *tree) removed(w Worker, _ uint64, hashes []uint64, r *report) {
	wi := t.intern(w)
	for _, h := range hashes {
		n, ok := t.workers[wi].lookup.get(h)
		if !ok {
			t.violation(wi, r, ViolationBlockNotFound, h, 0)
			continue
		}
		t.workers[wi].lookup.del(h)
		t.leave(wi, n)
	}
}

// clear drops every block of worker wi and its unstable mark.
func (t *tree) clear(wi uint32) {
	ws := &t.workers[wi]
	ws.lookup.each(func(_ uint64, n uint32) { t.leave(wi, n) })
	ws.lookup.reset()
	ws.unstable = false
}

func (t *tree) clearWorker(w Worker) { t.clear(t.intern(w)) }

// ranks returns the indexes of every known rank of worker id.
func (t *tree) ranks(id uint64) []uint32 {
	var out []uint32
	for _, wi := range t.order {
		if t.workers[wi].w.ID == id {
			out = append(out, wi)
		}
	}
	return out
}

func (t *tree) clearAll(id uint64) {
	for _, wi := range t.ranks(id) {
		t.clear(wi)
	}
}

func (t *tree) removeWorker(id uint64) {
	for _, wi := range t.ranks(id) {
		t.clear(wi)
		pos := int(t.rank[wi])
		t.order = slices.Delete(t.order, pos, pos+1)
		t.rerank(pos)
		delete(t.index, t.workers[wi].w)
		t.workers[wi] = wstate{}
		t.freeW = append(t.freeW, wi)
	}
}

func (t *tree) workerList() []Worker {
	out := make([]Worker, len(t.order))
	for i, wi := range t.order {
		out[i] = t.workers[wi].w
	}
	return out
}

func (t *tree) stats() Stats {
	s := Stats{Nodes: t.live, Violations: t.totals, Workers: make([]WorkerStats, len(t.order))}
	for i, wi := range t.order {
		ws := &t.workers[wi]
		s.Workers[i] = WorkerStats{Worker: ws.w, Blocks: uint64(ws.lookup.len()), Unstable: ws.unstable, Violations: ws.violations}
	}
	return s
}
