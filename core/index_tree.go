package core

import (
	"slices"
	"unsafe"
)

// tree is the index state. Every method runs under Index.mu: the
// mutating ones under the write lock, the rest under the read lock.
// index_runs.go describes how blocks are stored; this file applies the
// events to them, block by block, with the semantics of docs/index.md.
type tree struct {
	runs      []run // by id; runs[rootRun] is the root, which holds no block
	runFree   uint32
	segs      []blockSegment // by id; segs[0] is never used (refs to it would be 0)
	freeSegs  []uint32       // free segment ids
	pool      blockPool
	live      uint64 // blocks in the tree
	childMaps []hashTable
	freeMaps  []uint32

	// aliases holds a holder's external hash for a block when it differs
	// from the block's own. Healthy clusters, whose engines agree on
	// hashes, never have any.
	aliases map[aliasKey]uint64

	workers []wstate // by interned index
	index   map[Worker]uint32
	freeW   []uint32
	order   []uint32 // live worker indexes sorted by Worker
	rank    []uint32 // by worker index: position in order

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
	lookup     hashTable // external hash -> blockRef
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
	t.runs = []run{{parent: noRun, firstChild: noRun, next: noRun, prev: noRun, flags: runLive}}
	t.segs = make([]blockSegment, 1)
	t.childMaps = make([]hashTable, 1) // index 0 means "no map"
	t.aliases = map[aliasKey]uint64{}
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

// holds reports whether worker wi holds block b.
func (t *tree) holds(b blockRef, wi uint32) bool {
	id, off := t.runAt(b)
	return t.runs[id].cut(wi) > off
}

// name returns worker wi's external hash for block b, which it holds.
func (t *tree) name(b blockRef, wi uint32) uint64 {
	id, _ := t.runAt(b)
	if t.runs[id].flags&runAlias != 0 {
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
	ws.lookup.del(x)
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
		if r := &t.runs[id]; off+1 < r.len() {
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
	return t.runs[c].first()
}

// endRunAt makes block b (or the root) the last block of its run, so
// that a child can hang off it, and returns that run.
func (t *tree) endRunAt(b blockRef) uint32 {
	if b == rootRef {
		return rootRun
	}
	id, off := t.runAt(b)
	if off+1 < t.runs[id].len() {
		return t.split(id, off+1)
	}
	return id
}

// isDetachedTop reports whether block b heads a detached run.
func (t *tree) isDetachedTop(b blockRef) bool {
	id, off := t.runAt(b)
	return off == 0 && t.runs[id].parent == noRun
}

// chainTop returns the top of cur's ancestor chain: rootRef when cur is
// attached, else the first block of the detached run above it. It is
// cached for the walk of one store (a store only descends, so the top
// stays the same until the tree's shape changes).
func (t *tree) chainTop(cur blockRef) blockRef {
	if !t.topValid {
		t.topCache = t.top(cur)
		t.topValid = true
	}
	return t.topCache
}

func (t *tree) top(b blockRef) blockRef {
	if b == rootRef {
		return rootRef
	}
	id, _ := t.runAt(b)
	for {
		p := t.runs[id].parent
		if p == rootRun {
			return rootRef
		}
		if p == noRun {
			return t.runs[id].first()
		}
		id = p
	}
}

// newBlock adds block (x, l) under cur, which has no child under l,
// held by nobody yet: appended to cur's run when cur ends a run that can
// grow, else as a new run with room for the n blocks a store has left.
func (t *tree) newBlock(cur blockRef, x, l uint64, n int) blockRef {
	p := t.endRunAt(cur)
	if t.canExtend(p) {
		return t.extend(p, x, l)
	}
	c := t.startRun(x, l, n)
	t.link(p, c)
	return t.runs[c].first()
}

// reattach links old, the first block of a detached run, under cur as its
// child under local hash l (cur has none).
func (t *tree) reattach(cur, old blockRef, l uint64) {
	oid, _ := t.runAt(old)
	s := &t.segs[old.seg()]
	s.locals[old.pos()-s.base] = l
	t.runs[oid].key = l
	p := t.endRunAt(cur)
	t.link(p, oid)
	t.topValid = false
}

// rejectSelfReference records a store rejected whole because a block of
// it has its parent's hash (selfReference, checked over the whole store
// before any of it is applied).
func (t *tree) rejectSelfReference(w Worker, h uint64, r *report) {
	t.violation(t.intern(w), r, ViolationSelfReference, h, 0)
}

// stored applies a store, or (more) the next section of one, chained
// under the last block of the section before (Index.ApplyStored). It
// reports whether the store goes on: not when it was dropped, nor when a
// section finds the worker no longer names its parent (another writer
// cleared or removed the worker in between: what is left of the store is
// dropped, as if it had come after, without a violation).
func (t *tree) stored(w Worker, _ uint64, parent *uint64, blocks []StoredBlock, more bool, r *report) bool {
	wi := t.intern(w)
	cur := rootRef
	if parent != nil {
		p, ok := t.workers[wi].lookup.get(*parent)
		if !ok {
			if !more {
				t.violation(wi, r, ViolationParentNotFound, *parent, 0)
			}
			return false
		}
		cur = blockRef(p)
	}
	t.topValid = false
	lookup := &t.workers[wi].lookup
	// Each block the store names is a new name of wi's (but for a block it
	// already holds): grow its table once, before the probes start.
	lookup.reserve(len(blocks))
	for i := 0; i < prefetchDistance; i += 2 * prefetchBatch {
		prefetchStored(lookup, blocks, i)
	}
	prefetched := 0 // the lookups of blocks[:prefetched+prefetchDistance] are started
	for i := 0; i < len(blocks); i++ {
		if i >= prefetched {
			prefetched = i + 2*prefetchBatch
			prefetchStored(lookup, blocks, i+prefetchDistance)
		}
		x, l := blocks[i].BlockHash, blocks[i].TokensHash
		n := t.child(cur, l)
		// One probe for a new name: where x was not found is where bind
		// puts it (at), as nothing changes the lookup in between.
		v, named, at := lookup.find(x)
		old := blockRef(v)
		fresh := false
		switch {
		case n != noRef:
			if ext := t.extOf(n); ext != x {
				t.violation(wi, r, ViolationHashMismatch, x, ext)
			}
		case named && t.isDetachedTop(old) && old != t.chainTop(cur):
			// The worker still holds this block under a parent that was
			// dropped (it is detached): re-attach it here, as Dynamo does,
			// unless that would close a cycle.
			t.reattach(cur, old, l)
			n = old
		default:
			n = t.newBlock(cur, x, l, len(blocks)-i)
			fresh = !named
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
		if fresh {
			k := t.appendFresh(wi, n, blocks[i+1:])
			i += k
			cur += blockRef(k)
		}
	}
	return true
}

// appendFresh appends the blocks of a store that follow a block it just
// added, while their names are new to worker wi, and returns how many:
// the store's usual tail. last, the block just added, is the last of its
// run, which ends its segment, has no child and is wholly held by wi, so
// each block is what the general step would do (no child to find, a new
// block appended in place, wi's cut one longer) without its lookups.
func (t *tree) appendFresh(wi uint32, last blockRef, rest []StoredBlock) int {
	id, _ := t.runAt(last)
	r := &t.runs[id]
	sid := r.seg
	s := &t.segs[sid]
	lookup := &t.workers[wi].lookup
	// The segment's arrays and the next block's ref are kept in locals (the
	// compiler would otherwise store them back through s at every block).
	locals, exts := s.locals, s.exts
	next := r.last() + 1
	n := 0
	for ; n < len(rest); n++ {
		if n%(2*prefetchBatch) == 0 {
			prefetchStored(lookup, rest, n+prefetchDistance)
		}
		x, l := rest[n].BlockHash, rest[n].TokensHash
		if !lookup.add(x, uint64(next)) {
			break // x names a block of wi already: the general step's case
		}
		if len(locals) == cap(locals) {
			s.locals, s.exts = locals, exts
			t.grow(sid)
			locals, exts = s.locals, s.exts
		}
		locals = append(locals, l)
		exts = append(exts, x)
		next++
	}
	s.locals, s.exts = locals, exts
	r.hi += uint32(n)
	r.holders[r.holderIndex(wi)].cut += uint32(n)
	t.live += uint64(n)
	return n
}

// An event has the name lookups of the blocks prefetchDistance ahead of
// the one it works on fetched, a batch of prefetchBatch every
// prefetchBatch blocks: nearly every first probe into a worker's large
// name table is a cache miss, and misses started early overlap each other
// and the work on the blocks before instead of each stalling the walk in
// turn. (Measured with BenchmarkApplySteady: 8 blocks ahead took a fifth
// off a block's time, 16 a little more; fetching both lines of a group
// counts as much as the distance.)
const (
	prefetchBatch    = 4
	prefetchDistance = 16
)

// prefetchNames starts the lookups of names[i:i+prefetchBatch].
func prefetchNames(m *hashTable, names []uint64, i int) {
	if len(m.groups) == 0 || i >= len(names) {
		return
	}
	last := len(names) - 1
	m.prefetch4(names[i], names[min(i+1, last)], names[min(i+2, last)], names[min(i+3, last)])
}

// prefetchStored starts the lookups of the names of
// blocks[i:i+2*prefetchBatch]: their home groups' first cache lines, where
// an absent name's probe ends (a new name's slot is written, not read).
func prefetchStored(m *hashTable, blocks []StoredBlock, i int) {
	if len(m.groups) == 0 || i >= len(blocks) {
		return
	}
	var lines [8]unsafe.Pointer
	last := len(blocks) - 1
	for j := range lines {
		lines[j] = m.homeAddr(blocks[min(i+j, last)].BlockHash)
	}
	prefetch8(&lines)
}

// bind records that worker wi holds block b under external hash x, which
// names no block of wi. The worker's names stay one-to-one with the
// blocks it holds by name: a block it held under another name is renamed,
// one it held without a name gets x. (A name that named another block was
// taken from it first: see ghost.) at is where find placed x, or -1.
func (t *tree) bind(wi uint32, b blockRef, x uint64, at int) {
	ws := &t.workers[wi]
	id, off := t.runAt(b)
	if c := t.runs[id].cut(wi); c > off {
		if t.isGhost(wi, b) {
			delete(ws.ghosts, b)
		} else {
			ws.lookup.del(t.name(b, wi))
			delete(t.aliases, aliasKey{b, wi})
		}
		at = -1 // the lookup changed
	} else {
		if c < off {
			// wi holds the block before b only if it is in another run
			// (a store always walks down from a block it holds), so this
			// is a defence: b starts a run of its own, which wi's
			// prefix can reach.
			t.split(id, off)
			off = 0
		}
		t.runs[id].setCut(wi, off+1)
	}
	if !ws.lookup.insertAt(at, x, uint64(b)) {
		ws.lookup.put(x, uint64(b))
	}
	if x != t.extOf(b) {
		t.runs[id].flags |= runAlias
		t.aliases[aliasKey{b, wi}] = x
	}
}

// leave makes worker wi let go of block b (not of its name, which the
// caller drops). The blocks wi holds after b in b's run stay held: the
// run is split after b if they exist. A block nobody holds is dropped,
// and the runs below it are detached.
func (t *tree) leave(wi uint32, b blockRef) {
	id, off := t.runAt(b)
	r := &t.runs[id]
	if r.flags&runAlias != 0 {
		delete(t.aliases, aliasKey{b, wi})
	}
	if g := t.workers[wi].ghosts; len(g) > 0 {
		delete(g, b)
	}
	k := r.holderIndex(wi)
	if r.holders[k].cut > off+1 {
		id = t.split(id, off+1)
		r = &t.runs[id]
		k = r.holderIndex(wi)
	}
	// wi holds the run up to b, its last held block: let go of b.
	if off == 0 {
		r.holders = slices.Delete(r.holders, k, k+1)
	} else {
		r.holders[k].cut = off
	}
	if off+1 == r.len() && r.maxCut() == off {
		t.dropLast(id)
	}
}

func (t *tree) removed(w Worker, _ uint64, hashes []uint64, r *report) {
	wi := t.intern(w)
	lookup := &t.workers[wi].lookup
	for i := 0; i < prefetchDistance; i += prefetchBatch {
		prefetchNames(lookup, hashes, i)
	}
	var tail tailEater
	for i, h := range hashes {
		if i%prefetchBatch == 0 {
			prefetchNames(lookup, hashes, i+prefetchDistance)
		}
		v, ok, at := lookup.find(h)
		if !ok {
			t.violation(wi, r, ViolationBlockNotFound, h, 0)
			continue
		}
		lookup.delAt(at)
		b := blockRef(v)
		if tail.eats(b) {
			continue
		}
		tail.flush(t)
		t.leave(wi, b)
		tail.start(t, wi, b)
	}
	tail.flush(t)
}

// tailEater is removed's fast path for what engines do most: evict a
// prompt's blocks from the last one back. Once a removal has left a run
// that worker wi alone holds, by name, with no alias, each next removal of
// the run's new last block does what leave would (drop that block: wi's
// cut and the run one shorter, the segment's arrays too when the run ends
// them) and is only counted; flush applies the count.
type tailEater struct {
	id    uint32 // the run; 0 (the root) when there is none
	seg   uint32 // its segment
	lo    uint32 // its start: the eater stops there
	hi    uint32 // its end, as the blocks eaten leave it
	eaten uint32 // blocks eaten since the last flush
	tail  bool   // the run ends its segment's arrays
}

// start sets the eater up after leave(wi, b), when b's run is left as
// above.
func (e *tailEater) start(t *tree, wi uint32, b blockRef) {
	s := &t.segs[b.seg()]
	if len(s.runs) == 0 || b.pos() < s.runs[0].lo || len(t.workers[wi].ghosts) > 0 {
		return
	}
	id, off := t.runAt(b)
	r := &t.runs[id]
	if off != r.len() || len(r.holders) != 1 || r.holders[0].wi != wi || r.flags&runAlias != 0 {
		return
	}
	*e = tailEater{id: id, seg: r.seg, lo: r.lo, hi: r.hi, tail: r.hi == s.end()}
}

// eats reports whether removing b is dropping the run's last block, and
// if so counts it.
func (e *tailEater) eats(b blockRef) bool {
	if e.id == 0 || e.hi == e.lo || b != mkRef(e.seg, e.hi-1) {
		return false
	}
	e.hi--
	e.eaten++
	return true
}

// flush applies the blocks eaten, and stops eating.
func (e *tailEater) flush(t *tree) {
	if e.eaten > 0 {
		r := &t.runs[e.id]
		t.live -= uint64(e.eaten)
		r.hi = e.hi
		if r.hi == r.lo {
			r.holders = r.holders[:0]
			t.freeRun(e.id)
		} else {
			r.holders[0].cut = r.len()
			if s := &t.segs[e.seg]; e.tail {
				s.locals = s.locals[:r.hi-s.base]
				s.exts = s.exts[:r.hi-s.base]
				if cap(s.locals) >= segmentTrimMin && 4*len(s.locals) <= cap(s.locals) {
					t.trimSegment(e.seg)
				}
			}
		}
	}
	*e = tailEater{}
}

// clear drops every block of worker wi, named or not, and its unstable
// mark: wi leaves each run it holds, whole.
func (t *tree) clear(wi uint32) {
	ws := &t.workers[wi]
	held := t.clearRuns[:0]
	ws.lookup.each(func(_, v uint64) {
		b := blockRef(v)
		id, _ := t.runAt(b)
		if t.runs[id].flags&runAlias != 0 {
			delete(t.aliases, aliasKey{b, wi})
		}
		held = append(held, id)
	})
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
		t.runs[id].setCut(wi, 0)
		t.shrink(id)
	}
	t.clearRuns = held[:0]
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
