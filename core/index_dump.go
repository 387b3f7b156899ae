package core

import (
	"slices"
)

// dump writes the tree as router events that rebuild it when replayed
// into an empty index: the same holders of the same nodes under the same
// names, the same unnamed holds (ghosts), the same links, the same
// detached nodes, the same known workers.
//
// Each named (worker, node) pair is one store of one block under the
// worker's name for the parent, in breadth-first order, as Dynamo dumps.
// Removes do not cascade, so a worker may hold a node without holding its
// parent: its store then also passes through the missing ancestors under
// temporary names, bridges, which the worker keeps for its later stores
// below them and removes in one event at the end of the pass. A bridge is
// made at most once per (worker, node), so the dump is linear in the
// tree's size: pairs plus at most one bridge per (worker, ancestor of a
// node it holds), never a path per pair (issue 10, item 3).
//
// A pass writes one tree: first the tree under the root, then each
// detached subtree under a temporary root child, whose bridges are
// removed at the end of its pass (which detaches it again). Ghosts are
// written at the end of their pass, deepest first, while the bridges
// still stand: a store reaches the node, then reuses its name for a
// temporary block, which leaves the node unnamed. Workers that hold
// nothing are written as a "cleared" event so that they stay known.
func (t *tree) dump() []RouterEvent {
	d := dumper{t: t, bridges: map[uint64]uint64{}, bridgeRefs: map[uint32][]bridgeRef{}, taken: map[uint32]map[uint64]struct{}{}}
	for _, wi := range t.order {
		if t.workers[wi].blocks() == 0 {
			d.emit(wi, Event{Kind: EventCleared})
		}
	}
	d.pass(rootNode)
	for n := uint32(1); n < uint32(int(t.slots)); n++ {
		nn := t.node(n)
		if nn.flags&flagLive == 0 || nn.parent != noNode {
			continue
		}
		d.tmpLocal = 0
		for t.child(rootNode, d.tmpLocal) != noNode {
			d.tmpLocal++
		}
		d.tmpWant = nn.external ^ 0x9e3779b97f4a7c15
		d.pass(n)
	}
	return d.out
}

type dumper struct {
	t   *tree
	out []RouterEvent
	// local hash of the temporary root child standing in for a detached
	// top's dropped parent, and the name its bridges try first
	tmpLocal, tmpWant uint64
	path              []uint32
	holders           []uint32
	ghosts            []ghostPair // of the current pass, breadth first
	// bridges maps aliasKey(node, worker) to the worker's temporary name
	// for a node it passes through (node noNode: the temporary root
	// child); bridgeRefs lists them per worker, in the order made.
	bridges    map[uint64]uint64
	bridgeRefs map[uint32][]bridgeRef
	// taken holds each worker's temporary names of the current pass: no
	// other temporary name of that worker may take them.
	taken map[uint32]map[uint64]struct{}
}

type ghostPair struct{ wi, n uint32 }

type bridgeRef struct {
	n    uint32
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
func (d *dumper) pass(top uint32) {
	d.ghosts = d.ghosts[:0]
	if top != rootNode {
		d.node(top)
	}
	d.subtree(top)
	for i := len(d.ghosts) - 1; i >= 0; i-- {
		d.ghost(d.ghosts[i].wi, d.ghosts[i].n)
	}
	d.dropBridges()
}

// subtree writes every pair of the nodes below top, breadth first (top
// itself is written by the caller).
func (d *dumper) subtree(top uint32) {
	t := d.t
	queue := []uint32{top}
	var kids []uint32
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		kids = kids[:0]
		for c := t.node(n).firstChild; c != noNode; c = t.node(c).next {
			kids = append(kids, c)
		}
		slices.SortFunc(kids, func(a, b uint32) int {
			la, lb := t.node(a).local, t.node(b).local
			if la < lb {
				return -1
			}
			if la > lb {
				return 1
			}
			return 0
		})
		for _, c := range kids {
			d.node(c)
			queue = append(queue, c)
		}
	}
}

// holdersOf returns n's holders in worker order, one naming the node
// with its own external hash first (so the rebuilt node keeps it).
func (d *dumper) holdersOf(n uint32) []uint32 {
	t := d.t
	d.holders = t.node(n).set.appendMembers(&t.bitsets, d.holders[:0])
	slices.SortFunc(d.holders, func(a, b uint32) int { return int(t.rank[a]) - int(t.rank[b]) })
	for i, wi := range d.holders {
		if !t.isGhost(wi, n) && t.name(n, wi) == t.node(n).external {
			copy(d.holders[1:i+1], d.holders[:i])
			d.holders[0] = wi
			break
		}
	}
	return d.holders
}

// node writes every named holder of n and queues the unnamed ones.
func (d *dumper) node(n uint32) {
	for _, wi := range d.holdersOf(n) {
		if d.t.isGhost(wi, n) {
			d.ghosts = append(d.ghosts, ghostPair{wi, n})
			continue
		}
		d.pair(wi, n)
	}
}

// pair writes one store making wi hold n under its name.
func (d *dumper) pair(wi, n uint32) {
	t := d.t
	parent, blocks := d.reach(wi, t.node(n).parent)
	blocks = append(blocks, StoredBlock{BlockHash: t.name(n, wi), TokensHash: t.node(n).local})
	d.emit(wi, Event{Kind: EventStored, ParentHash: parent, Blocks: blocks})
}

// reach returns the parent name and the leading blocks of a store of wi
// that ends at node from: under the nearest ancestor wi names or has a
// bridge to, through new bridges for those in between (and for the
// temporary root child above a detached top). from may be the root.
func (d *dumper) reach(wi, from uint32) (*uint64, []StoredBlock) {
	t := d.t
	d.path = d.path[:0] // nodes to bridge, bottom up
	var parent *uint64
	for a := from; a != rootNode; a = t.node(a).parent {
		if h, ok := d.bridges[aliasKey(a, wi)]; ok {
			parent = &h
			break
		}
		if a == noNode {
			d.path = append(d.path, noNode)
			break
		}
		if t.node(a).set.has(&t.bitsets, wi) && !t.isGhost(wi, a) {
			h := t.name(a, wi)
			parent = &h
			break
		}
		d.path = append(d.path, a)
	}
	blocks := make([]StoredBlock, 0, len(d.path)+1)
	for i := len(d.path) - 1; i >= 0; i-- {
		a := d.path[i]
		local, want := d.tmpLocal, d.tmpWant
		if a != noNode {
			local, want = t.node(a).local, t.node(a).external
		}
		h := d.tempName(wi, want)
		d.bridges[aliasKey(a, wi)] = h
		d.bridgeRefs[wi] = append(d.bridgeRefs[wi], bridgeRef{a, h})
		blocks = append(blocks, StoredBlock{BlockHash: h, TokensHash: local})
	}
	return parent, blocks
}

// tempName picks a name for wi that names none of its nodes and is none
// of its temporary names of this pass, preferring want (so that no
// mismatch is counted on replay).
func (d *dumper) tempName(wi uint32, want uint64) uint64 {
	taken := d.taken[wi]
	if taken == nil {
		taken = map[uint64]struct{}{}
		d.taken[wi] = taken
	}
	ws := &d.t.workers[wi]
	for h := want; ; h++ {
		if _, used := ws.lookup.get(h); used {
			continue
		}
		if _, used := taken[h]; used {
			continue
		}
		taken[h] = struct{}{}
		return h
	}
}

// ghost makes wi hold n without a name: it bridges to n (if no store did
// already), stores a temporary block under n, then one under that
// reusing n's bridge name, which leaves n unnamed, then removes both.
func (d *dumper) ghost(wi, n uint32) {
	t := d.t
	key := aliasKey(n, wi)
	if _, ok := d.bridges[key]; !ok {
		parent, blocks := d.reach(wi, n)
		d.emit(wi, Event{Kind: EventStored, ParentHash: parent, Blocks: blocks})
	}
	x := d.bridges[key]
	delete(d.bridges, key)
	free := uint64(0) // a local hash none of n's children has
	for t.child(n, free) != noNode {
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
			if h, ok := d.bridges[aliasKey(r.n, wi)]; ok && h == r.name {
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
