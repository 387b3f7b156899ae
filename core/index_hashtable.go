package core

import "math/bits"

// nameTable maps a worker's external block hashes to node ids: the
// per-worker lookup. It is an open-addressing table with linear probing
// and backward-shift deletion: unlike a Go map it leaves no tombstones,
// so the constant store/evict churn of an engine's cache never lengthens
// its probes. A slot is 12 bytes with its key and value side by side, so
// a probe touches one cache line, not one in a key array and another in
// a value array: the first probe into a large table is a cache miss, and
// the lookups of a store or an eviction are almost all first probes.
type nameTable struct {
	slots []nameSlot
	count int
	shift uint8 // 64 - log2(len(slots))
}

// nameSlot is one entry. The key is split in two halves so the slot
// needs 4-byte alignment only (12 bytes, not 16: the table is the larger
// part of the index's memory after the nodes).
type nameSlot struct {
	lo, hi uint32
	v      uint32 // node id + 1; 0 marks an empty slot
}

func (s *nameSlot) key() uint64 { return uint64(s.lo) | uint64(s.hi)<<32 }

func (s *nameSlot) set(k uint64, v uint32) {
	s.lo, s.hi, s.v = uint32(k), uint32(k>>32), v
}

// nameTableMin is the smallest capacity: small enough that the many
// workers holding little cost little.
const nameTableMin = 8

func (m *nameTable) len() int { return m.count }

// slot is where key k's probe starts. Keys are engines' hashes, but
// nothing obliges an engine to send well-mixed ones (small integers are
// common in tests and toy engines), so mix them first.
func (m *nameTable) slot(k uint64) int {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	return int(k >> m.shift)
}

func (m *nameTable) get(k uint64) (uint32, bool) {
	v, ok, _ := m.find(k)
	return v, ok
}

// find looks k up. When k is absent, at is the empty slot where a put of
// k would go: insertAt puts it there without probing again, provided the
// table did not change in between.
func (m *nameTable) find(k uint64) (v uint32, ok bool, at int) {
	if m.count == 0 {
		return 0, false, -1
	}
	mask := len(m.slots) - 1
	for i := m.slot(k); ; i = (i + 1) & mask {
		s := &m.slots[i]
		if s.v == 0 {
			return 0, false, i
		}
		if s.key() == k {
			return s.v - 1, true, i
		}
	}
}

// insertAt puts k, absent, into the empty slot at that find returned for
// it, reporting false (doing nothing) when the table must grow first or
// at is not usable; the caller then uses put.
func (m *nameTable) insertAt(at int, k uint64, v uint32) bool {
	if at < 0 || 4*(m.count+1) > 3*len(m.slots) {
		return false
	}
	m.slots[at].set(k, v+1)
	m.count++
	return true
}

// put sets k to node v.
func (m *nameTable) put(k uint64, v uint32) {
	if 4*(m.count+1) > 3*len(m.slots) {
		m.grow()
	}
	mask := len(m.slots) - 1
	for i := m.slot(k); ; i = (i + 1) & mask {
		s := &m.slots[i]
		if s.v == 0 {
			s.set(k, v+1)
			m.count++
			return
		}
		if s.key() == k {
			s.v = v + 1
			return
		}
	}
}

// del removes k, reporting whether it was there.
func (m *nameTable) del(k uint64) bool {
	_, ok, at := m.find(k)
	if ok {
		m.delAt(at)
	}
	return ok
}

// delAt removes the entry in slot i. The entries after it in its probe
// run move back, so every probe still ends at an empty slot.
func (m *nameTable) delAt(i int) {
	mask := len(m.slots) - 1
	for j := (i + 1) & mask; m.slots[j].v != 0; j = (j + 1) & mask {
		// The entry at j may fill the hole at i if its home slot is not
		// in the cyclic range (i, j].
		home := m.slot(m.slots[j].key())
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			m.slots[i] = m.slots[j]
			i = j
		}
	}
	m.slots[i] = nameSlot{}
	m.count--
}

func (m *nameTable) grow() {
	n := max(nameTableMin, 2*len(m.slots))
	old := m.slots
	m.slots = make([]nameSlot, n)
	m.shift = uint8(64 - bits.TrailingZeros(uint(n)))
	m.count = 0
	for i := range old {
		if old[i].v != 0 {
			m.put(old[i].key(), old[i].v-1)
		}
	}
}

// each calls f for every entry; f must not change the table.
func (m *nameTable) each(f func(k uint64, v uint32)) {
	for i := range m.slots {
		if s := &m.slots[i]; s.v != 0 {
			f(s.key(), s.v-1)
		}
	}
}

// reset empties the table, keeping its memory unless it is large.
func (m *nameTable) reset() {
	if len(m.slots) > 1024 {
		*m = nameTable{}
		return
	}
	clear(m.slots)
	m.count = 0
}
