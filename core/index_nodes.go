package core

import "unsafe"

// Nodes live in pages and refer to each other by index, so the tree holds
// almost no Go pointers for the garbage collector to trace and a node
// costs 56 bytes. Children are an intrusive doubly linked sibling list:
// most nodes of a prefix tree have one child, found by comparing one local
// hash. A node with more than childMapMin children also indexes them in a
// map[local hash]node, so the root and other wide branch points stay O(1).

const (
	rootNode uint32 = 0
	noNode   uint32 = ^uint32(0)

	// childMapMin is the child count above which a node indexes its
	// children in a map rather than scanning its sibling list.
	childMapMin = 8
)

const (
	// flagAlias: some holder names this node with an external hash other
	// than node.external (see tree.aliases).
	flagAlias uint8 = 1 << iota
	// flagLive: the node is in use (not on the free list).
	flagLive
)

// Pages hold nodePageSize nodes, except that the first one starts at
// firstPageSize nodes and doubles (moving its nodes) until it is full. An
// empty tree (the root alone) thus costs a few hundred bytes, not a page
// of 229 KB: a process, or a WASM instance in its 4 GiB, can hold tens of
// thousands of small indexes. Every id is still found at page id/4096,
// slot id%4096, with no branch: lookups, which chase ids from node to
// node, cost what they cost with fixed pages.
//
// Because the first page moves while it grows, a *node from t.node is
// valid only until the next newNode: keep ids, not pointers, across it.
const (
	firstPageSize = 8
	nodePageBits  = 12
	nodePageSize  = 1 << nodePageBits
)

// nodePage is the first node of a page; the page's other nodes follow it
// in the same allocation, reached by offset (see node).
type nodePage struct{ first node }

const nodeBytes = unsafe.Sizeof(node{})

// node returns node id; ids below tree.slots are valid.
func (t *tree) node(id uint32) *node {
	page := unsafe.Pointer(t.pages[id>>nodePageBits])
	return (*node)(unsafe.Add(page, uintptr(id&(nodePageSize-1))*nodeBytes))
}

// pageFull reports whether the pages have no slot for id slots, the next
// new node.
func pageFull(slots uint32) bool {
	if slots < nodePageSize {
		// The first page holds max(firstPageSize, the power of two at or
		// above slots) nodes.
		return slots == 0 || slots >= firstPageSize && slots&(slots-1) == 0
	}
	return slots%nodePageSize == 0
}

// addRoom makes room for node id t.slots: the first page of
// firstPageSize nodes, the first page at twice its size, or one more
// full page.
func (t *tree) addRoom() {
	switch s := t.slots; {
	case s == 0:
		t.pages = append(t.pages, newPage(firstPageSize))
	case s < nodePageSize:
		grown := newPage(int(2 * s))
		copy(pageNodes(grown, int(s)), pageNodes(t.pages[0], int(s)))
		t.pages[0] = grown
	default:
		t.pages = append(t.pages, newPage(nodePageSize))
	}
}

func newPage(size int) *nodePage {
	nodes := make([]node, size)
	return (*nodePage)(unsafe.Pointer(&nodes[0]))
}

// pageNodes returns the first n nodes of page p.
func pageNodes(p *nodePage, n int) []node { return unsafe.Slice(&p.first, n) }

type node struct {
	external   uint64 // the external hash of the first worker that stored it
	local      uint64 // its local hash: its key under its parent
	parent     uint32 // noNode: the root, a detached node, or a free node
	firstChild uint32
	next, prev uint32 // siblings; next links the free list too
	childMap   uint32 // 0: none; else index into tree.childMaps
	flags      uint8
	// kids counts the children while childMap is 0 (so at most
	// childMapMin+1), so that link knows when to index them without
	// walking the sibling list; it fills padding, the node stays 56 bytes.
	kids uint8
	set  workerSet
}

// child returns p's child under local hash h, or noNode.
func (t *tree) child(p uint32, h uint64) uint32 {
	n := t.node(p)
	if n.childMap != 0 {
		if c, ok := t.childMaps[n.childMap][h]; ok {
			return c
		}
		return noNode
	}
	for c := n.firstChild; c != noNode; {
		cn := t.node(c)
		if cn.local == h {
			return c
		}
		c = cn.next
	}
	return noNode
}

// newNode takes a node from the free list or the next unused slot.
func (t *tree) newNode(external, local uint64) uint32 {
	var id uint32
	if t.free != noNode {
		id = t.free
		t.free = t.node(id).next
	} else {
		if pageFull(t.slots) {
			t.addRoom()
		}
		id = t.slots
		t.slots++
	}
	*t.node(id) = node{external: external, local: local, parent: noNode,
		firstChild: noNode, next: noNode, prev: noNode, flags: flagLive}
	t.live++
	return id
}

// link makes c (detached) p's child under c's local hash.
func (t *tree) link(p, c uint32) {
	pn, cn := t.node(p), t.node(c)
	cn.parent = p
	cn.prev = noNode
	cn.next = pn.firstChild
	if pn.firstChild != noNode {
		t.node(pn.firstChild).prev = c
	}
	pn.firstChild = c
	if pn.childMap != 0 {
		t.childMaps[pn.childMap][cn.local] = c
		return
	}
	pn.kids++
	if pn.kids > childMapMin {
		t.indexChildren(p)
	}
}

func (t *tree) indexChildren(p uint32) {
	var id uint32
	if k := len(t.freeMaps); k > 0 {
		id = t.freeMaps[k-1]
		t.freeMaps = t.freeMaps[:k-1]
	} else {
		t.childMaps = append(t.childMaps, make(map[uint64]uint32, 2*childMapMin))
		id = uint32(len(t.childMaps) - 1)
	}
	m := t.childMaps[id]
	for c := t.node(p).firstChild; c != noNode; c = t.node(c).next {
		m[t.node(c).local] = c
	}
	t.node(p).childMap = id
}

func (t *tree) dropChildMap(p uint32) {
	pn := t.node(p)
	if pn.childMap == 0 {
		return
	}
	// A map that grew large would keep its memory after clear; drop it.
	if len(t.childMaps[pn.childMap]) > 64*childMapMin {
		t.childMaps[pn.childMap] = make(map[uint64]uint32, 2*childMapMin)
	} else {
		clear(t.childMaps[pn.childMap])
	}
	t.freeMaps = append(t.freeMaps, pn.childMap)
	pn.childMap = 0
	pn.kids = 0 // dropped only once the last child left
}

// unlink detaches c from its parent.
func (t *tree) unlink(c uint32) {
	cn := t.node(c)
	p := cn.parent
	if p == noNode {
		return
	}
	pn := t.node(p)
	if cn.prev != noNode {
		t.node(cn.prev).next = cn.next
	} else {
		pn.firstChild = cn.next
	}
	if cn.next != noNode {
		t.node(cn.next).prev = cn.prev
	}
	if pn.childMap != 0 {
		delete(t.childMaps[pn.childMap], cn.local)
		if pn.firstChild == noNode {
			t.dropChildMap(p)
		}
	} else {
		pn.kids--
	}
	cn.parent, cn.next, cn.prev = noNode, noNode, noNode
}

// freeNode frees n, which no worker holds: it leaves its parent and its
// children become detached (they keep their own holders and subtrees).
func (t *tree) freeNode(n uint32) {
	t.unlink(n)
	for c := t.node(n).firstChild; c != noNode; {
		cn := t.node(c)
		next := cn.next
		cn.parent, cn.next, cn.prev = noNode, noNode, noNode
		c = next
	}
	t.dropChildMap(n)
	nn := t.node(n)
	nn.set.release(&t.bitsets)
	*nn = node{parent: noNode, firstChild: noNode, prev: noNode, next: t.free}
	t.free = n
	t.live--
	t.topValid = false
}

// top returns the highest ancestor of n: rootNode when n is attached.
func (t *tree) top(n uint32) uint32 {
	for {
		p := t.node(n).parent
		if p == noNode {
			return n
		}
		n = p
	}
}
