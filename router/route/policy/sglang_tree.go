package policy

import "github.com/kvhash/kvhash/core"

// sglangTree is the SGLang emulation's memory of where prompts went: a
// radix tree over a prompt's chained block hashes, each node a run of
// blocks whose last prompt went to one worker. Matching and inserting
// compare hashes along a run and look a child up once a node, so a
// 12k-block prompt costs a pass over its hashes and a few map lookups,
// not a map operation a block (several ms on long prompts, a cost
// upstream's token radix tree does not pay).
//
// It answers as a map from block hash to the last worker sent a prompt
// holding that block would: chained hashes name their whole prefix, so a
// block's node is reached by one path only.
type sglangTree struct {
	root sglangNode
}

type sglangNode struct {
	run      []uint64 // the node's blocks, in order
	last     core.Worker
	children map[uint64]*sglangNode // by the first block of the child's run
}

// longestMatch returns how many leading blocks some prompt held, and the
// worker the last such prompt went to.
func (t *sglangTree) longestMatch(blocks []uint64) (int, core.Worker) {
	var w core.Worker
	n, node := 0, &t.root
	for n < len(blocks) {
		child := node.children[blocks[n]]
		if child == nil {
			break
		}
		k := core.CommonPrefix(child.run, blocks[n:])
		n, w = n+k, child.last
		if k < len(child.run) {
			break
		}
		node = child
	}
	return n, w
}

// insert records that blocks went to w: every block of them now names w
// as its last worker. A run that the prompt covers in part is split where
// the prompt leaves it, so the rest keeps its own last worker.
func (t *sglangTree) insert(blocks []uint64, w core.Worker) {
	n, node := 0, &t.root
	for n < len(blocks) {
		child := node.children[blocks[n]]
		if child == nil {
			if node.children == nil {
				node.children = map[uint64]*sglangNode{}
			}
			node.children[blocks[n]] = &sglangNode{run: append([]uint64(nil), blocks[n:]...), last: w}
			return
		}
		k := core.CommonPrefix(child.run, blocks[n:])
		if k < len(child.run) {
			child.split(k)
		}
		child.last = w
		n, node = n+k, child
	}
}

// split keeps the first k blocks of the run in n and moves the rest, with
// n's last worker and children, to a new child.
func (n *sglangNode) split(k int) {
	tail := &sglangNode{run: n.run[k:], last: n.last, children: n.children}
	n.run = n.run[:k:k]
	n.children = map[uint64]*sglangNode{tail.run[0]: tail}
}
