package core

import (
	"slices"
)

// dump writes the tree as router events that rebuild it when replayed
// into an empty index: the same holders of the same nodes under the same
// names, the same links, the same detached nodes, the same known workers.
//
// Each (worker, node) pair is one store of one block under the worker's
// name for the parent, in breadth-first order, as Dynamo dumps. Removes do
// not cascade, so a worker may hold a node without holding its parent;
// its store then also passes through the parent(s) under temporary names
// and a remove of those names follows at once. A detached subtree (its
// top's parent was dropped) is rebuilt under a temporary root child that
// is removed once the subtree is written, which detaches it again.
// Workers that hold nothing are written as a "cleared" event so that they
// stay known.
func (t *tree) dump() []RouterEvent {
	d := dumper{t: t, used: map[uint64]struct{}{}}
	for _, wi := range t.order {
		if t.workers[wi].lookup.len() == 0 {
			d.emit(wi, Event{Kind: EventCleared})
		}
	}
	d.subtree(rootNode)
	for n := uint32(1); n < uint32(int(t.slots)); n++ {
		nn := t.node(n)
		if nn.flags&flagLive == 0 || nn.parent != noNode {
			continue
		}
		d.detached(n)
	}
	return d.out
}

type dumper struct {
	t   *tree
	out []RouterEvent
	// local hash of the temporary root child standing in for a detached
	// top's dropped parent
	tmpLocal uint64
	path     []uint32
	holders  []uint32
	used     map[uint64]struct{} // temporary names of the current store
	// tmpOf holds each holder's name for the temporary root child while a
	// detached subtree is written: no other temporary name may take it.
	tmpOf map[uint32]uint64
}

func (d *dumper) emit(wi uint32, ev Event) {
	ws := &d.t.workers[wi]
	ev.ID = uint64(len(d.out))
	ev.DPRank = ws.w.DPRank
	d.out = append(d.out, RouterEvent{WorkerID: ws.w.ID, StorageTier: TierDevice, Event: ev})
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
		if t.name(n, wi) == t.node(n).external {
			copy(d.holders[1:i+1], d.holders[:i])
			d.holders[0] = wi
			break
		}
	}
	return d.holders
}

// node writes every holder of n.
func (d *dumper) node(n uint32) {
	for _, wi := range d.holdersOf(n) {
		d.pair(wi, n)
	}
}

// pair writes one store making wi hold n: under the nearest ancestor wi
// holds, through temporary names for the ancestors it does not.
func (d *dumper) pair(wi, n uint32) {
	t := d.t
	ws := &t.workers[wi]
	d.path = d.path[:0] // ancestors wi does not hold, bottom up
	var parent *uint64
	for a := t.node(n).parent; ; a = t.node(a).parent {
		if a == noNode {
			// n is in a detached subtree whose top wi does not hold: go
			// through the temporary root child.
			d.path = append(d.path, noNode)
			break
		}
		if a == rootNode {
			break
		}
		if t.node(a).set.has(&t.bitsets, wi) {
			h := t.name(a, wi)
			parent = &h
			break
		}
		d.path = append(d.path, a)
	}
	blocks := make([]StoredBlock, 0, len(d.path)+1)
	var temps []uint64
	clear(d.used)
	if h, ok := d.tmpOf[wi]; ok && len(d.path) > 0 {
		d.used[h] = struct{}{}
	}
	for i := len(d.path) - 1; i >= 0; i-- {
		a := d.path[i]
		local, want := d.tmpLocal, uint64(0)
		if a != noNode {
			local, want = t.node(a).local, t.node(a).external
		}
		h := d.tempName(ws, want, parent, t.name(n, wi))
		blocks = append(blocks, StoredBlock{BlockHash: h, TokensHash: local})
		temps = append(temps, h)
	}
	blocks = append(blocks, StoredBlock{BlockHash: t.name(n, wi), TokensHash: t.node(n).local})
	d.emit(wi, Event{Kind: EventStored, ParentHash: parent, Blocks: blocks})
	if len(temps) > 0 {
		d.emit(wi, Event{Kind: EventRemoved, BlockHashes: temps})
	}
}

// tempName picks a name for wi that it uses for no node and that the
// current store does not use yet (d.used), preferring want (so that no
// mismatch is counted on replay).
func (d *dumper) tempName(ws *wstate, want uint64, parent *uint64, last uint64) uint64 {
	for h := want; ; h++ {
		if _, taken := ws.lookup.get(h); taken || h == last || (parent != nil && h == *parent) {
			continue
		}
		if _, taken := d.used[h]; taken {
			continue
		}
		d.used[h] = struct{}{}
		return h
	}
}

// detached writes the subtree of a detached top n: each holder stores
// [temporary root child, n]; the subtree follows; then the holders remove
// the temporary block, which drops it and detaches n again.
func (d *dumper) detached(n uint32) {
	t := d.t
	d.tmpLocal = 0
	for t.child(rootNode, d.tmpLocal) != noNode {
		d.tmpLocal++
	}
	d.tmpOf = map[uint32]uint64{}
	for _, wi := range slices.Clone(d.holdersOf(n)) {
		ws := &t.workers[wi]
		name := t.name(n, wi)
		clear(d.used)
		h := d.tempName(ws, t.node(n).external^0x9e3779b97f4a7c15, nil, name)
		d.emit(wi, Event{Kind: EventStored, Blocks: []StoredBlock{
			{BlockHash: h, TokensHash: d.tmpLocal},
			{BlockHash: name, TokensHash: t.node(n).local},
		}})
		d.tmpOf[wi] = h
	}
	d.subtree(n)
	for _, wi := range d.holdersOf(n) {
		d.emit(wi, Event{Kind: EventRemoved, BlockHashes: []uint64{d.tmpOf[wi]}})
	}
	d.tmpOf = nil
}
