package core

import (
	"fmt"
	"math/bits"
	"slices"
)

// checkInvariants verifies the index's internal consistency: the links
// between nodes, the worker sets, the lookups and the aliases all
// describe one forest, with no cycle, no empty node and no stale entry.
func checkInvariants(x *Index) error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	t := &x.t
	free := 0
	for n := t.free; n != noNode; n = t.node(n).next {
		if t.node(n).flags&flagLive != 0 {
			return fmt.Errorf("node %d is live and on the free list", n)
		}
		if free++; free > int(t.slots) {
			return fmt.Errorf("free list has a cycle")
		}
	}
	live := 0
	for id := range int(t.slots) {
		n := uint32(id)
		nn := t.node(n)
		if nn.flags&flagLive == 0 {
			continue
		}
		if n != rootNode {
			live++
			if err := checkSet(t, n); err != nil {
				return err
			}
		}
		if nn.parent != noNode {
			if t.node(nn.parent).flags&flagLive == 0 {
				return fmt.Errorf("node %d has a free parent", n)
			}
			if got := t.child(nn.parent, nn.local); got != n {
				return fmt.Errorf("node %d is not its parent's child under %d (found %d)", n, nn.local, got)
			}
		}
		steps := 0
		for a := n; a != noNode; a = t.node(a).parent {
			if steps++; steps > int(t.slots) {
				return fmt.Errorf("node %d is on a cycle", n)
			}
		}
		count, prev := 0, noNode
		for c := nn.firstChild; c != noNode; c = t.node(c).next {
			cn := t.node(c)
			if cn.parent != n || cn.prev != prev {
				return fmt.Errorf("child %d of %d has parent %d, prev %d (want %d)", c, n, cn.parent, cn.prev, prev)
			}
			prev = c
			if count++; count > int(t.slots) {
				return fmt.Errorf("sibling list of %d has a cycle", n)
			}
		}
		if nn.childMap == 0 && int(nn.kids) != count {
			return fmt.Errorf("node %d: counts %d children, list %d", n, nn.kids, count)
		}
		if nn.childMap != 0 && len(t.childMaps[nn.childMap]) != count {
			return fmt.Errorf("node %d: child map has %d entries, list %d", n, len(t.childMaps[nn.childMap]), count)
		}
	}
	if uint64(live) != t.live || live+free+1 != int(t.slots) {
		return fmt.Errorf("live %d (counted %d), free %d, slots %d", t.live, live, free, int(t.slots))
	}
	workers := 0
	for wi := range t.workers {
		ws := &t.workers[wi]
		if !ws.live {
			continue
		}
		workers++
		if t.index[ws.w] != uint32(wi) {
			return fmt.Errorf("worker %v is not interned as %d", ws.w, wi)
		}
		var err error
		ws.lookup.each(func(h uint64, n uint32) {
			switch {
			case err != nil:
			case t.node(n).flags&flagLive == 0 || !t.node(n).set.has(&t.bitsets, uint32(wi)):
				err = fmt.Errorf("%v names %d node %d, which it does not hold", ws.w, h, n)
			case t.name(n, uint32(wi)) != h:
				err = fmt.Errorf("%v names node %d %d in its lookup, %d in the node", ws.w, n, h, t.name(n, uint32(wi)))
			}
		})
		if err != nil {
			return err
		}
		for n := range ws.ghosts {
			if t.node(n).flags&flagLive == 0 || !t.node(n).set.has(&t.bitsets, uint32(wi)) {
				return fmt.Errorf("%v holds node %d unnamed, but the node does not list it", ws.w, n)
			}
		}
		if err := checkNameTable(&ws.lookup); err != nil {
			return fmt.Errorf("%v: %w", ws.w, err)
		}
	}
	if workers != len(t.index) || workers != len(t.order) {
		return fmt.Errorf("%d live workers, %d interned, %d ordered", workers, len(t.index), len(t.order))
	}
	if !slices.IsSortedFunc(t.order, func(a, b uint32) int { return t.workers[a].w.Compare(t.workers[b].w) }) {
		return fmt.Errorf("worker order is not sorted")
	}
	for k, h := range t.aliases {
		n, wi := uint32(k>>32), uint32(k)
		nn := t.node(n)
		if nn.flags&flagAlias == 0 || !nn.set.has(&t.bitsets, wi) || h == nn.external {
			return fmt.Errorf("stale alias %d of worker %d for node %d", h, wi, n)
		}
	}
	return nil
}

// checkSet verifies node n's worker set: members sorted (inline) or
// counted (bitset), every member a live worker whose lookup names n or
// that holds n unnamed (a ghost), not both.
func checkSet(t *tree, n uint32) error {
	s := t.node(n).set
	if s.n == 0 {
		return fmt.Errorf("node %d is live with no worker", n)
	}
	members := s.appendMembers(&t.bitsets, nil)
	if len(members) != int(s.n) || !slices.IsSorted(members) {
		return fmt.Errorf("node %d: set of %d has members %v", n, s.n, members)
	}
	if s.n > 3 {
		c := 0
		for _, w := range s.bitset(&t.bitsets) {
			c += bits.OnesCount64(w)
		}
		if c != int(s.n) {
			return fmt.Errorf("node %d: bitset has %d bits for %d members", n, c, s.n)
		}
	}
	for _, wi := range members {
		if int(wi) >= len(t.workers) || !t.workers[wi].live {
			return fmt.Errorf("node %d is held by dead worker %d", n, wi)
		}
		got, named := t.workers[wi].lookup.get(t.name(n, wi))
		named = named && got == n
		if named == t.isGhost(wi, n) {
			return fmt.Errorf("node %d: holder %v names it %v, holds it unnamed %v (want exactly one)", n, t.workers[wi].w, named, t.isGhost(wi, n))
		}
	}
	return nil
}

// checkNameTable verifies a lookup table: its count, its load, and that
// every key is found from its home slot without crossing an empty slot.
func checkNameTable(m *nameTable) error {
	n := 0
	for i := range m.slots {
		if m.slots[i].v == 0 {
			continue
		}
		n++
		mask := len(m.slots) - 1
		k := m.slots[i].key()
		for j := m.slot(k); j != i; j = (j + 1) & mask {
			if m.slots[j].v == 0 {
				return fmt.Errorf("key %d at slot %d is cut off from its home slot by empty slot %d", k, i, j)
			}
		}
	}
	if n != m.count || 4*n > 3*len(m.slots) {
		return fmt.Errorf("table counts %d, holds %d in %d slots", m.count, n, len(m.slots))
	}
	return nil
}
