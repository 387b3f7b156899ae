package core

import (
	"cmp"
	"slices"
)

// dump writes the tree as router events that rebuild it when replayed
// into an empty index: the same holders of the same blocks under the same
// names, the same unnamed holds (ghosts), the same links, the same
// detached blocks, the same known workers.
//
// Each named (worker, block) pair is one store of one block under the
// worker's name for the parent, in breadth-first order, as Dynamo dumps.
// Removes do not cascade, so a worker may hold a block without holding its
// parent: its store then also passes through the missing ancestors under
// temporary names, bridges, which the worker keeps for its later stores
// below them and removes in one event at the end of the pass. A bridge is
// made at most once per (worker, block), so the dump is linear in the
// tree's size: pairs plus at most one bridge per (worker, ancestor of a
// block it holds), never a path per pair (issue 10, item 3).
//
// A pass writes one tree: first the tree under the root, then each
// detached subtree under a temporary root child, whose bridges are
// removed at the end of its pass (which detaches it again). Ghosts are
// written at the end of their pass, deepest first, while the bridges
// still stand: a store reaches the block, then reuses its name for a
// temporary block, which leaves the block unnamed. Workers that hold
// nothing are written as a "cleared" event so that they stay known.
func (t *tree) dump() []RouterEvent {
	d := dumper{t: t, bridges: map[aliasKey]uint64{}, bridgeRefs: map[uint32][]bridgeRef{}, taken: map[uint32]map[uint64]struct{}{}}
	// One event a pair (and a few more): made at its size, not grown by
	// appends, which copied it whole at each doubling (a quarter of a
	// dump's time).
	pairs := 0
	for _, wi := range t.order {
		pairs += int(t.workers[wi].blocks())
	}
	d.out = make([]RouterEvent, 0, pairs+len(t.order))
	for _, wi := range t.order {
		if t.workers[wi].blocks() == 0 {
			d.emit(wi, Event{Kind: EventCleared})
		}
	}
	d.pass(rootRef)
	for id := uint32(1); id < uint32(t.runs.len()); id++ {
		r := t.runs.at(id)
		if r.flags&runLive == 0 || r.parent != noRun {
			continue
		}
		top := r.first()
		d.tmpLocal = 0
		for t.child(rootRef, d.tmpLocal) != noRef {
			d.tmpLocal++
		}
		d.tmpWant = t.extOf(top) ^ 0x9e3779b97f4a7c15
		d.pass(top)
	}
	return d.out
}

type dumper struct {
	t   *tree
	out []RouterEvent
	// blockArena and nameArena are where the events' blocks and parent
	// names are carved from, a chunk at a time: an allocation each would
	// cost a dump of millions of pairs as much as the rest of it.
	blockArena []StoredBlock
	nameArena  []uint64
	// local hash of the temporary root child standing in for a detached
	// top's dropped parent, and the name its bridges try first
	tmpLocal, tmpWant uint64
	path              []blockRef
	holders           []uint32
	ghosts            []ghostPair // of the current pass, breadth first
	// bridges maps (block, worker) to the worker's temporary name for a
	// block it passes through (block noRef: the temporary root child);
	// bridgeRefs lists them per worker, in the order made.
	bridges    map[aliasKey]uint64
	bridgeRefs map[uint32][]bridgeRef
	// taken holds each worker's temporary names of the current pass: no
	// other temporary name of that worker may take them.
	taken map[uint32]map[uint64]struct{}
}

type ghostPair struct {
	wi uint32
	b  blockRef
}

type bridgeRef struct {
	b    blockRef
	name uint64
}

func (d *dumper) emit(wi uint32, ev Event) {
	ws := &d.t.workers[wi]
	ev.ID = uint64(len(d.out))
	ev.DPRank = ws.w.DPRank
	d.out = append(d.out, RouterEvent{WorkerID: ws.w.ID, StorageTier: TierDevice, Event: ev})
}

// pass writes the tree under top (the root, or a detached top with top
// itself), then its ghosts, then removes its bridges.
func (d *dumper) pass(top blockRef) {
	d.ghosts = d.ghosts[:0]
	if top != rootRef {
		d.block(top)
	}
	d.subtree(top)
	for i := len(d.ghosts) - 1; i >= 0; i-- {
		d.ghost(d.ghosts[i].wi, d.ghosts[i].b)
	}
	d.dropBridges()
}

// subtree writes every pair of the blocks below top, breadth first (top
// itself is written by the caller).
func (d *dumper) subtree(top blockRef) {
	t := d.t
	queue := []blockRef{top}
	var kids []blockRef
	for len(queue) > 0 {
		b := queue[0]
		queue = queue[1:]
		kids = t.appendChildren(kids[:0], b)
		slices.SortFunc(kids, func(a, b blockRef) int { return cmp.Compare(t.localOf(a), t.localOf(b)) })
		for _, c := range kids {
			d.block(c)
			queue = append(queue, c)
		}
	}
}

// appendChildren appends block b's children (b may be the root).
func (t *tree) appendChildren(dst []blockRef, b blockRef) []blockRef {
	id := rootRun
	if b != rootRef {
		var off uint32
		id, off = t.runAt(b)
		if off+1 < t.runs.at(id).len() {
			return append(dst, b+1)
		}
	}
	for c := t.runs.at(id).firstChild; c != noRun; c = t.runs.at(c).next {
		dst = append(dst, t.runs.at(c).first())
	}
	return dst
}

// parentOf returns block b's parent: rootRef at the root, noRef for a
// detached top.
func (t *tree) parentOf(b blockRef) blockRef {
	id, off := t.runAt(b)
	if off > 0 {
		return b - 1
	}
	switch p := t.runs.at(id).parent; p {
	case rootRun:
		return rootRef
	case noRun:
		return noRef
	default:
		return t.runs.at(p).last()
	}
}

// holdersOf returns b's holders in worker order, one naming the block
// with its own external hash first (so the rebuilt block keeps it).
func (d *dumper) holdersOf(b blockRef) []uint32 {
	t := d.t
	id, off := t.runAt(b)
	d.holders = d.holders[:0]
	for _, h := range t.runs.at(id).holders {
		if h.cut > off {
			d.holders = append(d.holders, h.wi)
		}
	}
	slices.SortFunc(d.holders, func(a, b uint32) int { return int(t.rank[a]) - int(t.rank[b]) })
	ext := t.extOf(b)
	for i, wi := range d.holders {
		if !t.isGhost(wi, b) && t.name(b, wi) == ext {
			copy(d.holders[1:i+1], d.holders[:i])
			d.holders[0] = wi
			break
		}
	}
	return d.holders
}

// block writes every named holder of b and queues the unnamed ones.
func (d *dumper) block(b blockRef) {
	for _, wi := range d.holdersOf(b) {
		if d.t.isGhost(wi, b) {
			d.ghosts = append(d.ghosts, ghostPair{wi, b})
			continue
		}
		d.pair(wi, b)
	}
}

// pair writes one store making wi hold b under its name.
func (d *dumper) pair(wi uint32, b blockRef) {
	t := d.t
	parent, blocks := d.reach(wi, t.parentOf(b))
	blocks = append(blocks, StoredBlock{BlockHash: t.name(b, wi), TokensHash: t.localOf(b)})
	d.emit(wi, Event{Kind: EventStored, ParentHash: parent, Blocks: blocks})
}

// reach returns the parent name and the leading blocks of a store of wi
// that ends at block from: under the nearest ancestor wi names or has a
// bridge to, through new bridges for those in between (and for the
// temporary root child above a detached top). from may be the root.
func (d *dumper) reach(wi uint32, from blockRef) (*uint64, []StoredBlock) {
	t := d.t
	d.path = d.path[:0] // blocks to bridge, bottom up
	var parent *uint64
	for a := from; a != rootRef; a = t.parentOf(a) {
		if h, ok := d.bridges[aliasKey{a, wi}]; ok {
			parent = d.nameOf(h)
			break
		}
		if a == noRef {
			d.path = append(d.path, noRef)
			break
		}
		if t.holds(a, wi) && !t.isGhost(wi, a) {
			parent = d.nameOf(t.name(a, wi))
			break
		}
		d.path = append(d.path, a)
	}
	blocks := d.blocksFor(len(d.path) + 1)
	for i := len(d.path) - 1; i >= 0; i-- {
		a := d.path[i]
		local, want := d.tmpLocal, d.tmpWant
		if a != noRef {
			local, want = t.localOf(a), t.extOf(a)
		}
		h := d.tempName(wi, want)
		d.bridges[aliasKey{a, wi}] = h
		d.bridgeRefs[wi] = append(d.bridgeRefs[wi], bridgeRef{a, h})
		blocks = append(blocks, StoredBlock{BlockHash: h, TokensHash: local})
	}
	return parent, blocks
}

// dumpArenaChunk is how many blocks or names a dump's arenas get at a
// time.
const dumpArenaChunk = 4096

// blocksFor returns an empty slice with room for n blocks, carved from
// the block arena (its capacity is n: an append past it copies).
func (d *dumper) blocksFor(n int) []StoredBlock {
	if n > dumpArenaChunk/4 {
		return make([]StoredBlock, 0, n)
	}
	if len(d.blockArena)+n > cap(d.blockArena) {
		d.blockArena = make([]StoredBlock, 0, dumpArenaChunk)
	}
	i := len(d.blockArena)
	d.blockArena = d.blockArena[:i+n]
	return d.blockArena[i : i : i+n]
}

// nameOf returns a pointer to h, carved from the name arena.
func (d *dumper) nameOf(h uint64) *uint64 {
	if len(d.nameArena) == cap(d.nameArena) {
		d.nameArena = make([]uint64, 0, dumpArenaChunk)
	}
	d.nameArena = append(d.nameArena, h)
	return &d.nameArena[len(d.nameArena)-1]
}

// tempName picks a name for wi that names none of its blocks and is none
// of its temporary names of this pass, preferring want (so that no
// mismatch is counted on replay).
func (d *dumper) tempName(wi uint32, want uint64) uint64 {
	taken := d.taken[wi]
	if taken == nil {
		taken = map[uint64]struct{}{}
		d.taken[wi] = taken
	}
	ws := &d.t.workers[wi]
	ks := d.t.nameKeys(wi)
	for h := want; ; h++ {
		if _, used := ws.lookup.get(h, &ks); used {
			continue
		}
		if _, used := taken[h]; used {
			continue
		}
		taken[h] = struct{}{}
		return h
	}
}

// ghost makes wi hold b without a name: it bridges to b (if no store did
// already), stores a temporary block under b, then one under that
// reusing b's bridge name, which leaves b unnamed, then removes both.
func (d *dumper) ghost(wi uint32, b blockRef) {
	t := d.t
	key := aliasKey{b, wi}
	if _, ok := d.bridges[key]; !ok {
		parent, blocks := d.reach(wi, b)
		d.emit(wi, Event{Kind: EventStored, ParentHash: parent, Blocks: blocks})
	}
	x := d.bridges[key]
	delete(d.bridges, key)
	free := uint64(0) // a local hash none of b's children has
	for t.child(b, free) != noRef {
		free++
	}
	// Two stores: a block may not repeat its own store's parent hash.
	tmp := d.tempName(wi, x+1)
	d.emit(wi, Event{Kind: EventStored, ParentHash: &x, Blocks: []StoredBlock{{BlockHash: tmp, TokensHash: free}}})
	d.emit(wi, Event{Kind: EventStored, ParentHash: &tmp, Blocks: []StoredBlock{{BlockHash: x, TokensHash: 0}}})
	d.emit(wi, Event{Kind: EventRemoved, BlockHashes: []uint64{tmp, x}})
}

// dropBridges removes every bridge still standing, one event per worker
// in worker order, and forgets the pass's temporary names.
func (d *dumper) dropBridges() {
	for _, wi := range d.t.order {
		refs := d.bridgeRefs[wi]
		if len(refs) == 0 {
			continue
		}
		var names []uint64
		for _, r := range refs {
			if h, ok := d.bridges[aliasKey{r.b, wi}]; ok && h == r.name {
				names = append(names, h)
			}
		}
		if len(names) > 0 {
			d.emit(wi, Event{Kind: EventRemoved, BlockHashes: names})
		}
	}
	clear(d.bridges)
	clear(d.bridgeRefs)
	clear(d.taken)
}
