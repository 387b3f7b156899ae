package core

import (
	"math/bits"
)

// A large child table (a branch point with thousands of children: the
// root's, when many prompts share no prefix) rehashes without stopping
// the index, as a name table grows (index_names_drain.go): the rehash
// allocates the new groups and keeps the old ones beside them
// (hashTable.old), and each hashDrainChunk mutations that follow move
// the next hashDrainChunk old groups over. A lookup that misses the new
// groups looks in old (matches too: they only read); an insert goes to
// the new groups; a delete takes the key from where it is. A moved slot
// becomes a tombstone in old, so that probes for the keys still there go
// on past it.
//
// The pace is enough: a rehash leaves room for at least as many inserts
// as old has groups (a doubling: half the new slots' capacity; a
// same-size rehash, which clears tombstones: the table is less than half
// full), and a group a mutation drains old in as many mutations.

const (
	// hashDrainMin is the smallest table (256 groups, 32 KiB, ~1,300
	// entries) that rehashes incrementally; rehashing a smaller one at
	// once costs a few microseconds.
	hashDrainMin = 256
	// hashDrainChunk is how many old groups a drain step moves.
	hashDrainChunk = 4
)

// startDrain replaces the table's groups by n empty ones and keeps the
// current ones as old, to be drained.
func (m *hashTable) startDrain(n int) {
	old := *m
	old.next = nil
	m.old = &old
	m.groups = m.takeNext(n)
	m.shift = uint8(64 - bits.TrailingZeros(uint(n)))
	m.count = 0
	m.growthLeft = n*groupSlots*3/4 - old.count
	m.drainAt, m.credit = 0, 0
}

// hashPrepareMin is the smallest table whose next groups are made off
// the lock: every table that grows incrementally. Setting a table's
// control words costs the writer their pages' faults, a microsecond or so
// a page (a 256 KiB table's, a few hundred microseconds under load).
const hashPrepareMin = hashDrainMin

// prepareGrowth starts making the groups of the table's next doubling
// in another goroutine, once the table is close to it (put asks when an
// eighth of its room is left).
func (m *hashTable) prepareGrowth() {
	if m.next != nil || len(m.groups) < hashPrepareMin {
		return
	}
	n := 2 * len(m.groups)
	ch := make(chan []hashGroup, 1)
	m.next = ch
	go func() { ch <- emptyGroups(n) }()
}

// takeNext returns n empty groups: those prepareGrowth made, when they are
// ready and of that size (a rehash that only clears tombstones keeps the
// size), else new ones.
func (m *hashTable) takeNext(n int) []hashGroup {
	ch := m.next
	m.next = nil
	if ch != nil {
		select {
		case gs := <-ch:
			if len(gs) == n {
				return gs
			}
		default:
		}
	}
	return emptyGroups(n)
}

func emptyGroups(n int) []hashGroup {
	gs := make([]hashGroup, n)
	for i := range gs {
		gs[i].ctrl = emptyCtrl
	}
	return gs
}

// drainSome counts one mutation and moves the next hashDrainChunk old
// groups every hashDrainChunk of them. Callers call it after their own
// change, when m.old != nil; a position find returned is stale after it.
func (m *hashTable) drainSome() {
	if m.credit++; m.credit < hashDrainChunk {
		return
	}
	m.credit = 0
	m.drain(hashDrainChunk)
}

// drain moves the entries of the next groups old groups into the new
// ones, and drops old once it is empty.
func (m *hashTable) drain(groups int) {
	old := m.old
	end := min(len(old.groups), int(m.drainAt)+groups)
	for gi := int(m.drainAt); gi < end; gi++ {
		g := &old.groups[gi]
		for c := matchFull(g.ctrl); c != 0; c &= c - 1 {
			i := firstByte(c)
			m.insertNew(g.keys[i], g.vals[i])
			m.growthLeft++ // counted already, while in old
			setCtrl(&g.ctrl, uint(i), ctrlDeleted)
			g.keys[i], g.vals[i] = 0, 0
			old.count--
		}
	}
	m.drainAt = int32(end)
	if end == len(old.groups) {
		m.old, m.drainAt, m.credit = nil, 0, 0
	}
}
