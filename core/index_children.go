package core

// A run's children: an intrusive sibling list, indexed by a hash table
// once there are more than childMapMin.

// link makes run c (detached) a child of run p under c's key.
func (t *tree) link(p, c uint32) {
	pr, cr := t.runs.at(p), t.runs.at(c)
	cr.parent = p
	cr.prev = noRun
	cr.next = pr.firstChild
	if pr.firstChild != noRun {
		t.runs.at(pr.firstChild).prev = c
	}
	pr.firstChild = c
	if pr.childMap != 0 {
		t.childMaps[pr.childMap].put(cr.key, uint64(c))
	} else if pr.kids++; pr.kids > childMapMin {
		t.indexChildren(p)
	}
	if p == rootRun {
		t.rootLinked(c)
	}
}

func (t *tree) indexChildren(p uint32) {
	var m uint32
	if k := len(t.freeMaps); k > 0 {
		m = t.freeMaps[k-1]
		t.freeMaps = t.freeMaps[:k-1]
	} else {
		t.childMaps = append(t.childMaps, hashTable{})
		m = uint32(len(t.childMaps) - 1)
	}
	for c := t.runs.at(p).firstChild; c != noRun; c = t.runs.at(c).next {
		t.childMaps[m].put(t.runs.at(c).key, uint64(c))
	}
	t.runs.at(p).childMap = m
}

func (t *tree) dropChildMap(p uint32) {
	pr := t.runs.at(p)
	if pr.childMap == 0 {
		return
	}
	t.childMaps[pr.childMap].reset()
	t.freeMaps = append(t.freeMaps, pr.childMap)
	pr.childMap = 0
	pr.kids = 0 // dropped only once the last child left
}

// unlink detaches run c from its parent.
func (t *tree) unlink(c uint32) {
	cr := t.runs.at(c)
	p := cr.parent
	if p == noRun {
		return
	}
	if p == rootRun {
		t.rootLeaving(c)
	}
	pr := t.runs.at(p)
	if cr.prev != noRun {
		t.runs.at(cr.prev).next = cr.next
	} else {
		pr.firstChild = cr.next
	}
	if cr.next != noRun {
		t.runs.at(cr.next).prev = cr.prev
	}
	if pr.childMap != 0 {
		t.childMaps[pr.childMap].del(cr.key)
		if pr.firstChild == noRun {
			t.dropChildMap(p)
		}
	} else {
		pr.kids--
	}
	cr.parent, cr.next, cr.prev = noRun, noRun, noRun
	if p == rootRun {
		t.rootUnlinked(c, cr.key)
	}
}

// childRun returns p's child run under local hash l, or noRun.
func (t *tree) childRun(p uint32, l uint64) uint32 {
	if p == rootRun && !t.rootFilter.mayHold(l) {
		return noRun
	}
	return t.childOf(p, l)
}

// childOf is childRun without the root's filter, for a caller that has
// asked it already.
func (t *tree) childOf(p uint32, l uint64) uint32 {
	pr := t.runs.at(p)
	if pr.childMap != 0 {
		if c, ok := t.childMaps[pr.childMap].get(l); ok {
			return uint32(c)
		}
		return noRun
	}
	for c := pr.firstChild; c != noRun; {
		cr := t.runs.at(c)
		if cr.key == l {
			return c
		}
		c = cr.next
	}
	return noRun
}

// branches reports whether run id's last block has more than one child.
func (t *tree) branches(id uint32) bool {
	c := t.runs.at(id).firstChild
	return c != noRun && t.runs.at(c).next != noRun
}

// detachChildren makes every child of run id a detached run: its last
// block is about to go.
func (t *tree) detachChildren(id uint32) {
	for c := t.runs.at(id).firstChild; c != noRun; {
		cr := t.runs.at(c)
		next := cr.next
		cr.parent, cr.next, cr.prev = noRun, noRun, noRun
		c = next
	}
	t.runs.at(id).firstChild = noRun
	t.dropChildMap(id)
	t.runs.at(id).kids = 0
	t.topValid = false
}
