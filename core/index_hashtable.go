package core

import "math/bits"

// nameTable maps a worker's external block hashes to node ids: the
// per-worker lookup. It is an open-addressing table with linear probing
// and backward-shift deletion: unlike a Go map it leaves no tombstones,
// so the constant store/evict churn of an engine's cache never lengthens
// its probes, and it costs 12 bytes a slot.
type nameTable struct {
	keys  []uint64
	vals  []uint32 // node id + 1; 0 marks an empty slot
	count int
	shift uint8 // 64 - log2(len(keys))
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
	if m.count == 0 {
		return 0, false
	}
	mask := len(m.keys) - 1
	for i := m.slot(k); ; i = (i + 1) & mask {
		v := m.vals[i]
		if v == 0 {
			return 0, false
		}
		if m.keys[i] == k {
			return v - 1, true
		}
	}
}

// put sets k to node v.
func (m *nameTable) put(k uint64, v uint32) {
	if 4*(m.count+1) > 3*len(m.keys) {
		m.grow()
	}
	mask := len(m.keys) - 1
	for i := m.slot(k); ; i = (i + 1) & mask {
		if m.vals[i] == 0 {
			m.keys[i], m.vals[i] = k, v+1
			m.count++
			return
		}
		if m.keys[i] == k {
			m.vals[i] = v + 1
			return
		}
	}
}

// del removes k, reporting whether it was there. The entries after it in
// its probe run move back, so every probe still ends at an empty slot.
func (m *nameTable) del(k uint64) bool {
	if m.count == 0 {
		return false
	}
	mask := len(m.keys) - 1
	i := m.slot(k)
	for {
		if m.vals[i] == 0 {
			return false
		}
		if m.keys[i] == k {
			break
		}
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; m.vals[j] != 0; j = (j + 1) & mask {
		// The entry at j may fill the hole at i if its home slot is not
		// in the cyclic range (i, j].
		home := m.slot(m.keys[j])
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			m.keys[i], m.vals[i] = m.keys[j], m.vals[j]
			i = j
		}
	}
	m.keys[i], m.vals[i] = 0, 0
	m.count--
	return true
}

func (m *nameTable) grow() {
	n := max(nameTableMin, 2*len(m.keys))
	old := *m
	m.keys = make([]uint64, n)
	m.vals = make([]uint32, n)
	m.shift = uint8(64 - bits.TrailingZeros(uint(n)))
	m.count = 0
	for i, v := range old.vals {
		if v != 0 {
			m.put(old.keys[i], v-1)
		}
	}
}

// each calls f for every entry; f must not change the table.
func (m *nameTable) each(f func(k uint64, v uint32)) {
	for i, v := range m.vals {
		if v != 0 {
			f(m.keys[i], v-1)
		}
	}
}

// reset empties the table, keeping its memory unless it is large.
func (m *nameTable) reset() {
	if len(m.keys) > 1024 {
		*m = nameTable{}
		return
	}
	clear(m.keys)
	clear(m.vals)
	m.count = 0
}
