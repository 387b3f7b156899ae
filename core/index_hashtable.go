package core

import "math/bits"

// hashTable maps 64-bit keys to non-zero 64-bit values: the children of
// wide branch points (local hash -> run). (A worker's names, the hot
// table, are a nameTable: index_names.go.) It is laid out as a Swiss table
// (the design of Abseil's flat_hash_map, of Rust's hashbrown, which
// Dynamo's index uses, and of Go's own maps): slots in groups, each group
// with a word of control bytes holding a 7-bit tag of each slot's hash, so
// that one word compare finds the candidate slots of a key, or shows the
// key absent, without a branch per slot. A group is seven slots and its
// control word: 128 bytes, two cache lines exactly, the control word and
// the keys in the first, the values in the second. Deletion is O(1): a
// slot becomes empty when its group has an empty slot (no probe ever
// passed through the group), else a tombstone, which inserts reuse and
// rehashing clears.
type hashTable struct {
	groups []hashGroup // a power of two of them, or none
	count  int         // entries
	// growthLeft is how many inserts into empty slots the table takes
	// before it must rehash (its load stays at most 3/4).
	growthLeft int
	shift      uint8 // 64 - log2(len(groups))
	// old is the table a rehash left to drain into groups, a few groups
	// at a time (index_hashtable_drain.go); nil when none. While it is
	// there, count is the entries in groups, old.count those still in
	// old, and growthLeft counts both.
	old     *hashTable
	drainAt int32 // old's next group to move
	credit  int32 // mutations since the last move
	// next brings the groups of the next doubling, made off the lock
	// (prepareGrowth); nil when none were asked for.
	next chan []hashGroup
}

type hashGroup struct {
	// ctrl has one byte per slot: ctrlEmpty, ctrlDeleted, or the slot's
	// tag (a hash's low 7 bits); its top byte, which has no slot, is
	// always ctrlDeleted, which no match below reports.
	ctrl uint64
	// The keys share the control word's line, so that a lookup compares
	// in one line; the values are the other line, which find starts
	// fetching at once, beside it.
	keys [groupSlots]uint64
	vals [groupSlots]uint64
	_    uint64
}

const (
	groupSlots = 7
	// A slot's position ("at") is group<<slotShift | slot.
	slotShift = 3

	ctrlEmpty   = 0x80 // 1000 0000
	ctrlDeleted = 0xfe // 1111 1110

	bytesLSB = 0x0101010101010101
	// slotsMSB is the high bit of each slot's control byte.
	slotsMSB = 0x0080808080808080
	// emptyCtrl is the control word of an empty group.
	emptyCtrl = 0xfe80808080808080
)

// hashOf scrambles a key. Keys are engines' hashes, but nothing obliges an
// engine to send well-mixed ones (small integers are common in tests and
// toy engines). Its top bits choose the group, its low 7 bits are the tag.
func hashOf(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	return k ^ k>>33
}

// matchTag returns the bytes of ctrl equal to tag (< 0x80) as a mask of
// their high bits. A byte just above a match may be reported too (the
// word trick borrows), so callers compare the key.
func matchTag(ctrl, tag uint64) uint64 {
	x := ctrl ^ (bytesLSB * tag)
	return (x - bytesLSB) &^ x & slotsMSB
}

// matchEmpty returns the empty bytes of ctrl: high bit set, bit 1 clear
// (a deleted byte has both).
func matchEmpty(ctrl uint64) uint64 { return ctrl &^ (ctrl << 6) & slotsMSB }

// matchFree returns the empty or deleted bytes of ctrl.
func matchFree(ctrl uint64) uint64 { return ctrl & slotsMSB }

// matchFull returns the full bytes of ctrl.
func matchFull(ctrl uint64) uint64 { return ^ctrl & slotsMSB }

// firstByte returns the index of the lowest byte set in a match mask.
func firstByte(m uint64) int { return bits.TrailingZeros64(m) >> 3 }

func setCtrl(ctrl *uint64, i uint, b uint64) {
	shift := uint(i) * 8
	*ctrl = *ctrl&^(0xff<<shift) | b<<shift
}

// hashTableMinGroups is the smallest table: small enough that the many
// workers holding little cost little.
const hashTableMinGroups = 1

func (m *hashTable) len() int {
	if m.old != nil {
		return m.count + m.old.count
	}
	return m.count
}

func (m *hashTable) get(k uint64) (uint64, bool) {
	v, ok, _ := m.find(k)
	return v, ok
}

// find looks k up. at is its slot's position when found; when k is
// absent it is the free slot where a put of k would go, which insertAt
// takes without probing again, provided the table did not change in
// between. The probe visits k's home group, then groups at triangular
// steps, which reach every group of a power-of-two table; it ends at a
// group with an empty slot.
func (m *hashTable) find(k uint64) (v uint64, ok bool, at int) {
	groups := m.groups
	if len(groups) == 0 {
		return 0, false, -1
	}
	h := hashOf(k)
	tags := bytesLSB * (h & 0x7f)
	mask := uint(len(groups) - 1)
	g := uint(h>>m.shift) & mask
	free := -1
	for step := uint(1); ; step++ {
		grp := &groups[g]
		ctrl := grp.ctrl
		v0 := grp.vals[0] // the values' line, on its way while the keys are compared
		x := ctrl ^ tags
		for c := (x - bytesLSB) &^ x & slotsMSB; c != 0; c &= c - 1 {
			// Only full slots can match (see matchTag): the key decides.
			i := firstByte(c)
			if i < groupSlots && grp.keys[i] == k {
				if i == 0 {
					return v0, true, int(g) << slotShift
				}
				return grp.vals[i], true, int(g)<<slotShift | i
			}
		}
		if free < 0 {
			if f := matchFree(ctrl); f != 0 {
				free = int(g)<<slotShift | firstByte(f)
			}
		}
		if matchEmpty(ctrl) != 0 {
			if m.old != nil {
				if v, ok, at := m.old.find(k); ok {
					return v, true, at | atOld
				}
			}
			return 0, false, free
		}
		g = (g + step) & mask
	}
}

// insertAt puts k, absent, into the free slot at that find returned for
// it, reporting false (doing nothing) when the table must grow first or
// at is not usable; the caller then uses put.
func (m *hashTable) insertAt(at int, k, v uint64) bool {
	if at < 0 {
		return false
	}
	g := &m.groups[uint(at)>>slotShift]
	i := uint(at) & (1<<slotShift - 1)
	if g.ctrl>>(8*i)&0xff == ctrlEmpty {
		if m.growthLeft == 0 {
			return false
		}
		m.growthLeft--
	}
	setCtrl(&g.ctrl, i, hashOf(k)&0x7f)
	g.keys[i], g.vals[i] = k, v
	m.count++
	return true
}

// put sets k to v (v != 0).
func (m *hashTable) put(k, v uint64) {
	_, ok, at := m.find(k)
	if ok {
		groups := m.groups
		if at&atOld != 0 {
			groups, at = m.old.groups, at&^atOld
		}
		groups[uint(at)>>slotShift].vals[uint(at)&(1<<slotShift-1)] = v
		return
	}
	if !m.insertAt(at, k, v) {
		m.rehash()
		m.insertNew(k, v)
	}
	if m.old != nil {
		m.drainSome()
	} else if m.growthLeft < len(m.groups)*groupSlots*3/32 {
		m.prepareGrowth()
	}
}

// insertNew puts k, known absent, into a table with room for it.
func (m *hashTable) insertNew(k, v uint64) {
	h := hashOf(k)
	mask := uint(len(m.groups) - 1)
	gi := uint(h>>m.shift) & mask
	for step := uint(1); ; step++ {
		g := &m.groups[gi]
		gi = (gi + step) & mask
		if f := matchFree(g.ctrl); f != 0 {
			i := uint(firstByte(f))
			if g.ctrl>>(8*i)&0xff == ctrlEmpty {
				m.growthLeft--
			}
			setCtrl(&g.ctrl, i, h&0x7f)
			g.keys[i], g.vals[i] = k, v
			m.count++
			return
		}
	}
}

// del removes k, reporting whether it was there.
func (m *hashTable) del(k uint64) bool {
	_, ok, at := m.find(k)
	if ok {
		m.delAt(at)
		if m.old != nil {
			m.drainSome()
		}
	}
	return ok
}

// delAt removes the entry in slot at. A probe stops at a group with an
// empty slot, so a slot of such a group can simply become empty; in a
// full group it becomes a tombstone, which keeps probes going past it.
func (m *hashTable) delAt(at int) {
	if at&atOld != 0 {
		m.old.delAt(at &^ atOld)
		m.growthLeft++ // its room was counted in m's
		return
	}
	g := &m.groups[uint(at)>>slotShift]
	i := uint(at) & (1<<slotShift - 1)
	g.keys[i], g.vals[i] = 0, 0
	if matchEmpty(g.ctrl) != 0 {
		setCtrl(&g.ctrl, i, ctrlEmpty)
		m.growthLeft++
	} else {
		setCtrl(&g.ctrl, i, ctrlDeleted)
	}
	m.count--
}

// rehash makes room: at twice the size when the table is over half
// full, else at the same size, which clears the tombstones. (A table is
// full at three quarters, not Abseil's seven eighths: with groups of seven
// slots, fuller groups send more probes and inserts on to the next group,
// which measured slower on the replayed traces.)
func (m *hashTable) rehash() {
	if m.old != nil {
		// Rehashing again before old is drained (which the drain's pace
		// rules out: TestHashTableRehashIsIncremental): finish it first.
		for m.old != nil {
			m.drain(hashDrainChunk)
		}
	}
	n := max(hashTableMinGroups, len(m.groups))
	if 2*m.count >= n*groupSlots*3/4 {
		n = max(hashTableMinGroups, 2*len(m.groups))
	}
	if len(m.groups) >= hashDrainMin {
		m.startDrain(n)
		return
	}
	m.rehashTo(n)
}

// rehashTo moves every entry into a new array of n groups.
func (m *hashTable) rehashTo(n int) {
	old := m.groups
	m.groups = make([]hashGroup, n)
	for i := range m.groups {
		m.groups[i].ctrl = emptyCtrl
	}
	m.shift = uint8(64 - bits.TrailingZeros(uint(n)))
	m.count = 0
	m.growthLeft = n * groupSlots * 3 / 4
	for gi := range old {
		g := &old[gi]
		for c := matchFull(g.ctrl); c != 0; c &= c - 1 {
			i := firstByte(c)
			m.insertNew(g.keys[i], g.vals[i])
		}
	}
}

// each calls f for every entry, in slot order; f must not change the
// table.
func (m *hashTable) each(f func(k, v uint64)) {
	if m.old != nil {
		m.old.each(f)
	}
	for gi := range m.groups {
		g := &m.groups[gi]
		for c := matchFull(g.ctrl); c != 0; c &= c - 1 {
			i := firstByte(c)
			f(g.keys[i], g.vals[i])
		}
	}
}

// reset empties the table, keeping its memory unless it is large.
func (m *hashTable) reset() {
	m.old, m.drainAt, m.credit, m.next = nil, 0, 0, nil
	if len(m.groups) > 128 {
		*m = hashTable{}
		return
	}
	for i := range m.groups {
		m.groups[i] = hashGroup{ctrl: emptyCtrl}
	}
	m.count = 0
	m.growthLeft = len(m.groups) * groupSlots * 3 / 4
}
