package core

import (
	"math/bits"
)

// A large name table grows without stopping the index: growth allocates
// the new halves and keeps the old ones beside them (nameTable.old), and
// the mutations that follow move the old entries over, nameDrainChunk
// halves every nameDrainChunk mutations. Until old is empty a lookup
// that misses the new halves looks in old; an insert goes to the new
// halves; a delete takes the name from where it is. Moving a whole table
// of millions of names at once (every name read back from its block, to
// hash it) held the index's lock for tens of milliseconds, doubling
// intervals apart, and every query waited behind it.
//
// The pace is enough: a growth leaves room for at least as many inserts
// as the old table held names (capacity: at least half of the doubled
// slots are free), a half holds seven names at most, and only inserts use
// that room, so the old halves, moved a half a mutation, are empty well
// before the new ones fill. (A faster pace makes each lock hold longer;
// a slower one keeps inserts checking two tables for longer: half a half
// a mutation grew an index from empty 15-20 % slower than moving every
// table at once, a half a mutation 2-4 %. With the new table's pages
// faulted in ahead (prepareGrowth), a 128-block section that moves 128
// halves stays well under a millisecond; faulting them in as it went, it
// held the lock 300-700 us.) (When a growth does come first, as a
// large reserve can make it, grow drains the rest at once; the
// tests check that a growth never has to.)

const (
	// nameDrainMin is the smallest table (512 halves, 32 KiB, ~3,000
	// names) that grows incrementally; moving a smaller one costs a few
	// tens of microseconds.
	nameDrainMin = 512
	// nameDrainChunk is how many old halves a drain step moves.
	nameDrainChunk = 8
)

// startDrain replaces the table's halves by n empty ones and keeps the
// current ones as old, to be drained.
func (m *nameTable) startDrain(n int) {
	old := *m
	old.next = nil
	m.old = &old
	m.halves = m.takeNext(n)
	m.shift = uint8(64 - bits.TrailingZeros(uint(n)))
	m.count = 0
	m.growthLeft = m.capacity(n) - old.count
	m.turned = 0
	m.drainAt, m.credit = 0, 0
}

// namePrepareMin is the smallest table whose next halves are made off
// the lock: every table that grows incrementally. Making a table's halves
// costs the writer that makes them its pages' zeroing, their first-touch
// faults (a microsecond or so a page: a 128-block section of inserts and
// drain steps into a fresh 32 MiB table held the lock 400-600 us; into a
// fresh 1 MiB one, 100-220 faults, 300-500 us on a loaded machine) and
// the garbage collector's assist for the bytes.
const namePrepareMin = nameDrainMin

// prepareGrowth starts making the halves of the table's next growth
// (as many as grow makes) in another goroutine, which writes to every page of
// them, once the table is within an eighth of its capacity of growing:
// late enough that the memory is not held long before it is used, early
// enough that it is ready when the growth comes (takeNext).
func (m *nameTable) prepareGrowth() {
	if m.next != nil || m.old != nil || len(m.halves) < namePrepareMin || m.growthLeft > m.capacity(len(m.halves))/8 {
		return
	}
	n := 2 * len(m.halves)
	if len(m.halves) < nameQuadrupleMax {
		n = 4 * len(m.halves) // as grow does
	}
	ch := make(chan []nameHalf, 1)
	m.next = ch
	go func() {
		hs := make([]nameHalf, n)
		const perPage = 4096 / 64
		for i := 0; i < len(hs); i += perPage {
			hs[i].ctrl = 0 // fault the page in
		}
		ch <- hs
	}()
}

// takeNext returns n empty halves: those prepareGrowth made, when they
// are ready and of that size, else new ones.
func (m *nameTable) takeNext(n int) []nameHalf {
	ch := m.next
	m.next = nil
	if ch != nil {
		select {
		case hs := <-ch:
			if len(hs) == n {
				return hs
			}
		default:
		}
	}
	return make([]nameHalf, n)
}

// drainSome counts one mutation and moves the next nameDrainChunk old
// halves every nameDrainChunk of them. Callers call it after their own
// change, when m.old != nil; a position find returned is stale after it.
func (m *nameTable) drainSome(ks *nameKeys) {
	if m.credit++; m.credit < nameDrainChunk {
		return
	}
	m.credit = 0
	m.drain(ks, nameDrainChunk)
}

// drain moves the entries of up to halves (at most nameDrainChunk) old
// halves into the new ones, and drops old once it is empty. A moved
// entry that was not in its home half no longer counts in the overflow
// counts of the old halves its probe passed, so that old's probes of
// absent names (every insert's, while old is there) stay as short as
// what is left in it allows.
func (m *nameTable) drain(ks *nameKeys, halves int) {
	old := m.old
	var buf [nameDrainChunk * groupSlots]nameEntry
	var from [nameDrainChunk * groupSlots]uint32 // each entry's old half
	entries := buf[:0]
	end := min(len(old.halves), int(m.drainAt)+min(halves, nameDrainChunk))
	for i := int(m.drainAt); i < end; i++ {
		hf := &old.halves[i]
		for c := hf.ctrl & slotsMSB; c != 0; c &= c - 1 {
			from[len(entries)] = uint32(i)
			entries = append(entries, nameEntry{v: hf.slots[firstByte(c)] &^ (slotMeta &^ slotDisplaced)})
		}
		hf.ctrl &= overflowMax
		hf.slots = [groupSlots]uint64{}
	}
	m.drainAt = int32(end)
	old.count -= len(entries)
	ks.readNames(entries)
	for i, e := range entries {
		if e.v&slotDisplaced != 0 {
			old.countOverflows(hashOf(e.k), uint(from[i]), ^uint64(overflowUnit-1))
		}
		m.insertNew(e.k, e.v&^slotDisplaced)
	}
	m.growthLeft += len(entries) // placing counts them again: they were counted in old
	if end == len(old.halves) {
		m.old, m.drainAt, m.credit = nil, 0, 0
	}
}
