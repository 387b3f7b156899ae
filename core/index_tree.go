package core

import (
	"slices"
)

// tree is the index state. Every method runs under Index.mu: the
// mutating ones under the write lock, the rest under the read lock.
// index_runs.go describes how blocks are stored; index_store.go and
// index_remove.go apply the events to them with the semantics of
// docs/index.md; this file holds the workers, their names and the clears.
type tree struct {
	runs      chunked[run] // by id; runs.at(rootRun) is the root, which holds no block
	runFree   uint32
	segs      chunked[blockSegment] // by id; segs.at(0) is never used (refs to it would be 0)
	freeSegs  []uint32              // free segment ids
	pool      blockPool
	live      uint64 // blocks in the tree
	childMaps []hashTable
	freeMaps  []uint32
	// rootFilter answers most lookups of a first block no run starts with.
	rootFilter rootFilter
	// nameScratch is the name tables' growth memory (nameTable.grow).
	nameScratch []nameEntry

	// aliases holds a holder's external hash for a block when it differs
	// from the block's own. Healthy clusters, whose engines agree on
	// hashes, never have any.
	aliases map[aliasKey]uint64

	workers []wstate // by interned index
	index   map[Worker]uint32
	// lastWorker is the worker intern found last (a hint: intern checks it).
	lastWorker uint32
	// positionLimit, when not 0, stands in for maxPositions (tests).
	positionLimit uint32
	freeW         []uint32
	order         []uint32 // live worker indexes sorted by Worker
	rank          []uint32 // by worker index: position in order

	totals [NumViolations]uint64

	// top of the current store's chain, cached for the cycle check.
	topCache blockRef
	topValid bool

	// clearRuns is clear's scratch list.
	clearRuns []uint32
}

type aliasKey struct {
	b  blockRef
	wi uint32
}

// wstate is one worker rank: its lookup from its external hashes to the
// blocks it holds by name (exactly one hash per such block), the blocks it
// holds without a name (ghosts), and its stats.
type wstate struct {
	w          Worker
	live       bool
	unstable   bool
	lookup     nameTable // external hash -> blockRef
	violations [NumViolations]uint64
	// ghosts are blocks the worker still holds after it reused their name
	// for another block (ViolationNameReused), as Dynamo keeps them: no
	// event can remove them, a clear does. nil for healthy workers.
	ghosts map[blockRef]struct{}
}

// blocks is the worker's tree size: every block it holds, named or not,
// including those in detached subtrees (which it does hold, though no
// query reaches them until a store re-attaches them).
func (ws *wstate) blocks() uint64 { return uint64(ws.lookup.len() + len(ws.ghosts)) }

func (t *tree) init() {
	t.runFree = noRun
	t.runs.push(run{parent: noRun, firstChild: noRun, next: noRun, prev: noRun, flags: runLive})
	t.segs.push(blockSegment{})
	t.childMaps = make([]hashTable, 1) // index 0 means "no map"
	t.aliases = map[aliasKey]uint64{}
	t.index = map[Worker]uint32{}
}

// intern returns w's index, registering w if it is new.
func (t *tree) intern(w Worker) uint32 {
	// Engines send their events in bursts: the last worker is the likely
	// one, checked without hashing it (a removed worker's slot is not
	// live, a reused one names another).
	if wi := t.lastWorker; int(wi) < len(t.workers) && t.workers[wi].live && t.workers[wi].w == w {
		return wi
	}
	if wi, ok := t.index[w]; ok {
		t.lastWorker = wi
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

// holds reports whether worker wi holds block b.
func (t *tree) holds(b blockRef, wi uint32) bool {
	id, off := t.runAt(b)
	return t.runs.at(id).cut(wi) > off
}

// name returns worker wi's external hash for block b, which it holds.
func (t *tree) name(b blockRef, wi uint32) uint64 {
	id, _ := t.runAt(b)
	if t.runs.at(id).flags&runAlias != 0 {
		if h, ok := t.aliases[aliasKey{b, wi}]; ok {
			return h
		}
	}
	return t.extOf(b)
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

// isGhost reports whether worker wi holds block b without a name.
func (t *tree) isGhost(wi uint32, b blockRef) bool {
	g := t.workers[wi].ghosts
	if len(g) == 0 {
		return false
	}
	_, ok := g[b]
	return ok
}

// ghost makes worker wi keep block old, which it names x, without a name:
// x is about to name another block of wi.
func (t *tree) ghost(wi uint32, old blockRef, x uint64) {
	ws := &t.workers[wi]
	ks := t.nameKeys(wi)
	ws.lookup.del(x, &ks)
	delete(t.aliases, aliasKey{old, wi})
	if ws.ghosts == nil {
		ws.ghosts = map[blockRef]struct{}{}
	}
	ws.ghosts[old] = struct{}{}
}

// child returns block b's child under local hash l, or noRef.
func (t *tree) child(b blockRef, l uint64) blockRef {
	id := rootRun
	if b != rootRef {
		var off uint32
		id, off = t.runAt(b)
		if r := t.runs.at(id); off+1 < r.len() {
			if t.localOf(b+1) == l {
				return b + 1
			}
			return noRef
		}
	}
	c := t.childRun(id, l)
	if c == noRun {
		return noRef
	}
	return t.runs.at(c).first()
}

// rejectSelfReference records a store rejected whole because a block of
// it has its parent's hash (selfReference, checked over the whole store
// before any of it is applied).
func (t *tree) rejectSelfReference(w Worker, h uint64, r *report) {
	t.violation(t.intern(w), r, ViolationSelfReference, h, 0)
}

// clear drops every block of worker wi, named or not, and its unstable
// mark: wi leaves each run it holds, whole.
func (t *tree) clear(wi uint32) {
	ws := &t.workers[wi]
	held := t.clearRuns[:0]
	// An emptied table is skipped, not walked: a large clear
	// (index_clear.go) ends here after removing every name, and walking
	// its empty halves took 0.4 ms at 250,000 names.
	if ws.lookup.len() > 0 {
		ws.lookup.each(func(b blockRef) {
			id, _ := t.runAt(b)
			if t.runs.at(id).flags&runAlias != 0 {
				delete(t.aliases, aliasKey{b, wi})
			}
			held = append(held, id)
		})
	}
	for b := range ws.ghosts {
		id, _ := t.runAt(b)
		held = append(held, id)
	}
	// In run order, not map order: the order runs are freed in decides
	// the ids later stores get, and with them the order of a dump, which
	// must be the same in every process (conformance compares dumps
	// across bindings).
	slices.Sort(held)
	held = slices.Compact(held)
	ws.lookup.reset()
	ws.ghosts = nil
	ws.unstable = false
	for _, id := range held {
		t.runs.at(id).setCut(wi, 0)
		t.shrink(id)
	}
	t.clearRuns = held[:0]
}

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
