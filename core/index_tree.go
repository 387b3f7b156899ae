package core

import (
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
}

// wstate is one worker rank: its lookup from its external hashes to the
// nodes it holds by name (exactly one hash per such node), the nodes it
// holds without a name (ghosts), and its stats.
type wstate struct {
	w          Worker
	live       bool
	unstable   bool
	lookup     nameTable
	violations [NumViolations]uint64
	// ghosts are nodes the worker still holds after it reused their name
	// for another block (ViolationNameReused), as Dynamo keeps them: no
	// event can remove them, a clear does. nil for healthy workers.
	ghosts map[uint32]struct{}
}

// blocks is the worker's tree size: every block it holds, named or not,
// including those in detached subtrees (which it does hold, though no
// query reaches them until a store re-attaches them).
func (ws *wstate) blocks() uint64 { return uint64(ws.lookup.len() + len(ws.ghosts)) }

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

// selfReference returns a block hash of the store equal to its parent
// hash, if any: such a store cannot describe a chain, and Dynamo rejects
// it whole. (A hash repeated among the blocks is applied, as Dynamo does:
// see ViolationNameReused.)
func selfReference(parent *uint64, blocks []StoredBlock) (uint64, bool) {
	if parent == nil {
		return 0, false
	}
	for i := range blocks {
		if blocks[i].BlockHash == *parent {
			return *parent, true
		}
	}
	return 0, false
}

// isGhost reports whether worker wi holds node n without a name.
func (t *tree) isGhost(wi, n uint32) bool {
	g := t.workers[wi].ghosts
	if len(g) == 0 {
		return false
	}
	_, ok := g[n]
	return ok
}

// ghost makes worker wi keep node old, which it names x, without a name:
// x is about to name another node of wi.
func (t *tree) ghost(wi, old uint32, x uint64) {
	ws := &t.workers[wi]
	ws.lookup.del(x)
	if t.node(old).flags&flagAlias != 0 {
		delete(t.aliases, aliasKey(old, wi))
	}
	if ws.ghosts == nil {
		ws.ghosts = map[uint32]struct{}{}
	}
	ws.ghosts[old] = struct{}{}
}

func (t *tree) stored(w Worker, _ uint64, parent *uint64, blocks []StoredBlock, r *report) {
	wi := t.intern(w)
	if h, bad := selfReference(parent, blocks); bad {
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
		// One probe for a new name: where x was not found is where bind
		// puts it (at), as nothing changes the lookup in between.
		old, named, at := lookup.find(x)
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
				// x named another block of w: w keeps that block
				// unnamed rather than leaving it, so that no block w
				// holds below it (in this store or before) is cut off.
				t.violation(wi, r, ViolationNameReused, x, 0)
				t.ghost(wi, old, x)
				at = -1
			}
			t.bind(wi, n, x, at)
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
// names no node of wi. The worker's names stay one-to-one with the nodes
// it holds by name: a node it held under another name is renamed, one it
// held without a name gets x. (A name that named another node was taken
// from it first: see ghost.) at is where find placed x, or -1.
func (t *tree) bind(wi, n uint32, x uint64, at int) {
	ws := &t.workers[wi]
	nn := t.node(n)
	if nn.set.has(&t.bitsets, wi) {
		if t.isGhost(wi, n) {
			delete(ws.ghosts, n)
		} else {
			ws.lookup.del(t.name(n, wi))
			delete(t.aliases, aliasKey(n, wi))
		}
		at = -1 // the lookup changed
	} else {
		nn.set.add(&t.bitsets, wi)
	}
	if !ws.lookup.insertAt(at, x, n) {
		ws.lookup.put(x, n)
	}
	if x != nn.external {
		nn.flags |= flagAlias
		t.aliases[aliasKey(n, wi)] = x
	}
}

// leave removes wi from n's holders (not from wi's lookup); a node no
// worker holds is freed.
func (t *tree) leave(wi, n uint32) {
	nn := t.node(n)
	if nn.flags&flagAlias != 0 {
		delete(t.aliases, aliasKey(n, wi))
	}
	if g := t.workers[wi].ghosts; len(g) > 0 {
		delete(g, n)
	}
	nn.set.remove(&t.bitsets, wi)
	if nn.set.n == 0 {
		t.freeNode(n)
	}
}

func (t *tree) removed(w Worker, _ uint64, hashes []uint64, r *report) {
	wi := t.intern(w)
	for _, h := range hashes {
		n, ok, at := t.workers[wi].lookup.find(h)
		if !ok {
			t.violation(wi, r, ViolationBlockNotFound, h, 0)
			continue
		}
		t.workers[wi].lookup.delAt(at)
		t.leave(wi, n)
	}
}

// clear drops every block of worker wi, named or not, and its unstable
// mark.
func (t *tree) clear(wi uint32) {
	ws := &t.workers[wi]
	ws.lookup.each(func(_ uint64, n uint32) { t.leave(wi, n) })
	ws.lookup.reset()
	if len(ws.ghosts) > 0 {
		// In node order, not map order: the order nodes are freed in
		// decides the ids later stores get, and with them the order of a
		// dump, which must be the same in every process (conformance
		// compares dumps across bindings).
		ghosts := make([]uint32, 0, len(ws.ghosts))
		for n := range ws.ghosts {
			ghosts = append(ghosts, n)
		}
		slices.Sort(ghosts)
		for _, n := range ghosts {
			t.leave(wi, n)
		}
	}
	ws.ghosts = nil
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
		s.Workers[i] = WorkerStats{Worker: ws.w, Blocks: ws.blocks(), Unstable: ws.unstable, Violations: ws.violations}
	}
	return s
}
