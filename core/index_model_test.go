package core

import (
	"slices"
)

// model is the deliberately naive index the property tests compare the
// real one with: pointer nodes, a map of children per node, a map of
// holders (worker -> its name for the node) and a set of unnamed holders
// (ghosts) per node, a map per worker. It follows docs/index.md's
// semantics step by step and is slow.
type model struct {
	root    *mnode
	nodes   int
	workers map[Worker]*mworker
	totals  [NumViolations]uint64
	enforce bool
}

type mnode struct {
	external, local uint64
	parent          *mnode // nil: detached (or the root)
	children        map[uint64]*mnode
	holders         map[*mworker]uint64
	ghosts          map[*mworker]bool
}

func (n *mnode) held(ws *mworker) bool {
	_, named := n.holders[ws]
	return named || n.ghosts[ws]
}

type mworker struct {
	w          Worker
	lookup     map[uint64]*mnode
	ghosts     map[*mnode]bool // nodes held without a name
	unstable   bool
	violations [NumViolations]uint64
}

// mviolation is what the model expects the index to report.
type mviolation struct {
	kind Violation
	hash uint64
}

func newModel() *model {
	return &model{root: &mnode{children: map[uint64]*mnode{}}, workers: map[Worker]*mworker{}}
}

func (m *model) worker(w Worker) *mworker {
	ws := m.workers[w]
	if ws == nil {
		ws = &mworker{w: w, lookup: map[uint64]*mnode{}, ghosts: map[*mnode]bool{}}
		m.workers[w] = ws
	}
	return ws
}

func (m *model) violate(ws *mworker, out *[]mviolation, kind Violation, hash uint64) {
	m.totals[kind]++
	ws.violations[kind]++
	if m.enforce {
		ws.unstable = true
	}
	*out = append(*out, mviolation{kind, hash})
}

func (m *model) stored(w Worker, parent *uint64, blocks []StoredBlock) []mviolation {
	var out []mviolation
	ws := m.worker(w)
	if parent != nil {
		for _, b := range blocks {
			if b.BlockHash == *parent {
				m.violate(ws, &out, ViolationSelfReference, b.BlockHash)
				return out
			}
		}
	}
	cur := m.root
	if parent != nil {
		cur = ws.lookup[*parent]
		if cur == nil {
			m.violate(ws, &out, ViolationParentNotFound, *parent)
			return out
		}
	}
	for _, b := range blocks {
		n := cur.children[b.TokensHash]
		if n != nil {
			if n.external != b.BlockHash {
				m.violate(ws, &out, ViolationHashMismatch, b.BlockHash)
			}
		} else if old := ws.lookup[b.BlockHash]; old != nil && old.parent == nil && m.top(cur) != old {
			old.parent, old.local = cur, b.TokensHash
			cur.children[b.TokensHash] = old
			n = old
		} else {
			n = &mnode{external: b.BlockHash, local: b.TokensHash, parent: cur,
				children: map[uint64]*mnode{}, holders: map[*mworker]uint64{}, ghosts: map[*mworker]bool{}}
			cur.children[b.TokensHash] = n
			m.nodes++
		}
		name, holds := n.holders[ws]
		if holds && name == b.BlockHash {
			m.violate(ws, &out, ViolationDuplicateStore, b.BlockHash)
		} else {
			if old := ws.lookup[b.BlockHash]; old != nil && old != n {
				// The name moves; the worker keeps the old block unnamed.
				m.violate(ws, &out, ViolationNameReused, b.BlockHash)
				delete(old.holders, ws)
				old.ghosts[ws], ws.ghosts[old] = true, true
			}
			if holds {
				delete(ws.lookup, name)
			}
			delete(n.ghosts, ws)
			delete(ws.ghosts, n)
			n.holders[ws] = b.BlockHash
			ws.lookup[b.BlockHash] = n
		}
		cur = n
	}
	return out
}

func (m *model) top(n *mnode) *mnode {
	for n.parent != nil {
		n = n.parent
	}
	return n
}

func (m *model) release(ws *mworker, n *mnode) {
	if name, named := n.holders[ws]; named {
		delete(ws.lookup, name)
	}
	delete(n.holders, ws)
	delete(n.ghosts, ws)
	delete(ws.ghosts, n)
	if len(n.holders) > 0 || len(n.ghosts) > 0 {
		return
	}
	if n.parent != nil {
		delete(n.parent.children, n.local)
		n.parent = nil
	}
	for _, c := range n.children {
		c.parent = nil
	}
	n.children = nil
	m.nodes--
}

func (m *model) removed(w Worker, hashes []uint64) []mviolation {
	var out []mviolation
	ws := m.worker(w)
	for _, h := range hashes {
		n := ws.lookup[h]
		if n == nil {
			m.violate(ws, &out, ViolationBlockNotFound, h)
			continue
		}
		m.release(ws, n)
	}
	return out
}

func (m *model) clear(ws *mworker) {
	for _, n := range ws.lookup {
		m.release(ws, n)
	}
	for n := range ws.ghosts {
		m.release(ws, n)
	}
	ws.unstable = false
}

func (m *model) clearWorker(w Worker) { m.clear(m.worker(w)) }

func (m *model) clearAll(id uint64) {
	for w, ws := range m.workers {
		if w.ID == id {
			m.clear(ws)
		}
	}
}

func (m *model) removeWorker(id uint64) {
	for w, ws := range m.workers {
		if w.ID == id {
			m.clear(ws)
			delete(m.workers, w)
		}
	}
}

// matches scores each worker by the consecutive query blocks it holds
// (named or not) from the root; with earlyExit, a walk with one worker
// left stops at a node with more than one child, as Dynamo 1.6.1's does.
func (m *model) matches(q []uint64, earlyExit bool) []Match {
	if len(q) == 0 {
		return nil
	}
	scores := map[*mworker]uint32{}
	n := m.root.children[q[0]]
	if n == nil {
		return nil
	}
	var active []*mworker
	for _, ws := range m.workers {
		if n.held(ws) {
			active = append(active, ws)
		}
	}
	depth := uint32(1)
	for int(depth) < len(q) {
		if earlyExit && len(active) == 1 && len(n.children) > 1 {
			break
		}
		next := n.children[q[depth]]
		if next == nil {
			break
		}
		var kept []*mworker
		for _, ws := range active {
			if next.held(ws) {
				kept = append(kept, ws)
			} else {
				scores[ws] = depth
			}
		}
		active = kept
		if len(active) == 0 {
			break
		}
		depth++
		n = next
	}
	for _, ws := range active {
		scores[ws] = depth
	}
	var out []Match
	for ws, s := range scores {
		out = append(out, Match{Worker: ws.w, Score: s, TreeSize: uint64(len(ws.lookup) + len(ws.ghosts))})
	}
	slices.SortFunc(out, func(a, b Match) int { return a.Worker.Compare(b.Worker) })
	return out
}

func (m *model) stats() Stats {
	s := Stats{Nodes: uint64(m.nodes), Violations: m.totals}
	for _, ws := range m.workers {
		s.Workers = append(s.Workers, WorkerStats{Worker: ws.w, Blocks: uint64(len(ws.lookup) + len(ws.ghosts)), Unstable: ws.unstable, Violations: ws.violations})
	}
	slices.SortFunc(s.Workers, func(a, b WorkerStats) int { return a.Worker.Compare(b.Worker) })
	return s
}
