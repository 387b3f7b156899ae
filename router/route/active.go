package route

import (
	"iter"
	"slices"

	"github.com/kvhash/kvhash/core"
)

// activeTree holds the block chains (sequence hashes) of the active
// requests of every rank, as a radix tree: a node is a run of hashes that
// the same ranks' requests pass through, so a chain's blocks cost a route
// a comparison each (sequential, in a run) and a step per node, not a map
// operation per block. A prompt of a conversation's next turn shares its
// whole prefix with the previous turn, still running on the same rank:
// recording it, asking how much of it each rank has active, and ending it
// walk one or two nodes however long the prompt (the slowest routes of
// the Mooncake trace had been this bookkeeping: 3-4 map operations of
// 100-400 ns a block, 1-5 ms for a 191k-token prompt).
//
// A node is held by a rank while one of the rank's requests passes
// through it, with a count of those requests; a rank holding a node holds
// every node above it (a chain passes through its whole prefix). A
// rank's active blocks are the hashes of the nodes it holds: a sequence
// hash names its whole prefix, so the same hash is the same place in the
// tree, counted once however many requests share it (as Dynamo's active
// sequences count). Chains end at node boundaries (insert splits a run
// where one ends), so ending a request finds its nodes whole; nodes are
// removed when no rank holds them, and never merged.
type activeTree struct {
	root node
	// blocks is, by slot, how many hashes the slot's rank holds.
	blocks []int
	// free: removed nodes, for the next ones (a decision allocates
	// nothing under the router's lock in a steady state: see
	// loadTable.addInto); at most freeNodesMax.
	free []*node
}

// freeNodesMax: removed nodes kept for reuse.
const freeNodesMax = 1024

type node struct {
	// run is this node's hashes: a part of the list of the request that
	// made the node, which is never written once routed.
	run    []uint64
	parent *node
	// kids are the nodes below, by the first hash of their run; nil: none.
	kids map[uint64]*node
	held []slotCount // the ranks holding the node, few
	// gen counts the node's removals: a request that made a node knows
	// its list is no longer part of the tree once gen has moved on.
	gen uint32
}

// slotCount is how many of a rank's requests pass through a node.
type slotCount struct {
	slot int32
	n    uint32
}

// insert records one more request of slot's rank along seq. It returns
// the node it made of the end of seq that no other request had, and the
// node's gen: seq is part of the tree until the node's gen moves on.
func (t *activeTree) insert(seq []uint64, slot int32) (made *node, gen uint32) {
	n := &t.root
	for i := 0; i < len(seq); {
		c := n.kids[seq[i]]
		if c == nil {
			c = t.newNode(seq[i:len(seq):len(seq)], n)
			n.adopt(c)
			t.hold(c, slot)
			return c, c.gen
		}
		k := core.CommonPrefix(c.run, seq[i:])
		if k < len(c.run) {
			t.split(c, k) // seq ends or leaves the run inside it
		}
		t.hold(c, slot)
		i += k
		n = c
	}
	return nil, 0
}

// newNode is a node of run under parent, reused when one is free.
func (t *activeTree) newNode(run []uint64, parent *node) *node {
	if k := len(t.free); k > 0 {
		c := t.free[k-1]
		t.free = t.free[:k-1]
		c.run, c.parent = run, parent
		return c
	}
	return &node{run: run, parent: parent}
}

// along yields the nodes seq goes through from the root, each with where
// seq stands after it (its offset past the node's shared part); a node
// whose run seq leaves or ends inside is the last one yielded.
func (t *activeTree) along(seq []uint64) iter.Seq2[*node, int] {
	return func(yield func(*node, int) bool) {
		n := &t.root
		for i := 0; i < len(seq); {
			c := n.kids[seq[i]]
			if c == nil {
				return
			}
			k := core.CommonPrefix(c.run, seq[i:])
			if !yield(c, i+k) || k < len(c.run) {
				return
			}
			i += k
			n = c
		}
	}
}

// remove ends one request of slot's rank along seq (recorded by insert,
// which split the runs where seq ends: its nodes are whole).
func (t *activeTree) remove(seq []uint64, slot int32) {
	n, at := &t.root, 0
	for c, end := range t.along(seq) {
		if end-at < len(c.run) {
			return // seq ends inside a run: not recorded (not reached)
		}
		t.release(c, slot)
		n, at = c, end
	}
	// Nodes no rank holds go, deepest first: a node's holders are its
	// parent's or fewer, so an empty node's subtree is empty too.
	for n != &t.root && len(n.held) == 0 {
		p := n.parent
		delete(p.kids, n.run[0])
		n.run, n.parent = nil, nil // its kids map is empty now, and kept
		n.gen++
		if len(t.free) < freeNodesMax {
			t.free = append(t.free, n)
		}
		n = p
	}
}

// depths sets depth[s], for every slot s below len(depth), to the number
// of leading hashes of seq that slot s's rank holds.
func (t *activeTree) depths(seq []uint64, depth []uint32) {
	clear(depth)
	for c, end := range t.along(seq) {
		// Going down, each holder's depth is the deepest it holds.
		for _, h := range c.held {
			if int(h.slot) < len(depth) {
				depth[h.slot] = uint32(end)
			}
		}
	}
}

// heldBlocks is how many hashes slot's rank holds.
func (t *activeTree) heldBlocks(slot int32) int {
	if int(slot) < len(t.blocks) {
		return t.blocks[slot]
	}
	return 0
}

func (t *activeTree) hold(c *node, slot int32) {
	for i := range c.held {
		if c.held[i].slot == slot {
			c.held[i].n++
			return
		}
	}
	c.held = append(c.held, slotCount{slot: slot, n: 1})
	if int(slot) >= len(t.blocks) {
		t.blocks = append(t.blocks, make([]int, int(slot)+1-len(t.blocks))...)
	}
	t.blocks[slot] += len(c.run)
}

func (t *activeTree) release(c *node, slot int32) {
	for i := range c.held {
		if c.held[i].slot != slot {
			continue
		}
		if c.held[i].n--; c.held[i].n == 0 {
			c.held = slices.Delete(c.held, i, i+1)
			t.blocks[slot] -= len(c.run)
		}
		return
	}
}

// adopt makes c a child of n.
func (n *node) adopt(c *node) {
	if n.kids == nil {
		n.kids = map[uint64]*node{}
	}
	n.kids[c.run[0]] = c
}

// split cuts n's run after k hashes (0 < k < len(run)): the rest becomes
// its only child, with its children and its holders (the same requests
// pass through both), so no rank's count of blocks changes.
func (t *activeTree) split(n *node, k int) {
	rest := t.newNode(n.run[k:], n)
	rest.held = append(rest.held[:0], n.held...)
	rest.kids, n.kids = n.kids, rest.kids // rest's own map (empty or nil) goes to n
	for _, c := range rest.kids {
		c.parent = rest
	}
	n.run = n.run[:k:k]
	n.adopt(rest)
}
