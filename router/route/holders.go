package route

import "math/bits"

// holders is, for each sequence hash active on any rank, the set of rank
// slots holding it: one row of a bit matrix per hash. It turns the cost's
// per-candidate question "how much of this prompt does rank r already
// have active?" into one walk down the prompt's hashes for all ranks at
// once (a map lookup per block, then word operations), where asking each
// rank's own block map cost a binary search of lookups per candidate: the
// largest part of a route's CPU with a hundred workers.
type holders struct {
	rows   map[uint64]uint32 // sequence hash -> row
	bits   []uint64          // rows of stride words each
	stride int               // words per row: room for stride*64 slots
	free   []uint32          // rows no hash uses (all zero)
	// rowsPeak: see shrink.go; compact rebuilds rows, bits and free.
	rowsPeak peak
}

func newHolders() holders {
	return holders{rows: map[uint64]uint32{}, stride: 1}
}

func (h *holders) row(r uint32) []uint64 {
	o := int(r) * h.stride
	return h.bits[o : o+h.stride : o+h.stride]
}

// fit makes rows wide enough for slots 0..slots-1 (rarely: the stride
// doubles).
func (h *holders) fit(slots int) {
	if slots <= h.stride*64 {
		return
	}
	stride := h.stride
	for slots > stride*64 {
		stride *= 2
	}
	n := len(h.bits) / h.stride
	wide := make([]uint64, n*stride)
	for r := range n {
		copy(wide[r*stride:], h.bits[r*h.stride:(r+1)*h.stride])
	}
	h.bits, h.stride = wide, stride
}

// set records that slot holds hash.
func (h *holders) set(hash uint64, slot int32) {
	r, ok := h.rows[hash]
	if !ok {
		if n := len(h.free); n > 0 {
			r, h.free = h.free[n-1], h.free[:n-1]
		} else {
			r = uint32(len(h.bits) / h.stride)
			h.bits = append(h.bits, make([]uint64, h.stride)...)
		}
		h.rows[hash] = r
		h.rowsPeak.grew(len(h.rows))
	}
	h.row(r)[slot>>6] |= 1 << (slot & 63)
}

// unset records that slot no longer holds hash; a row nobody holds is
// recycled.
func (h *holders) unset(hash uint64, slot int32) {
	r, ok := h.rows[hash]
	if !ok {
		return
	}
	row := h.row(r)
	row[slot>>6] &^= 1 << (slot & 63)
	for _, w := range row {
		if w != 0 {
			return
		}
	}
	delete(h.rows, hash)
	h.free = append(h.free, r)
}

// compact renumbers the rows in use from 0, dropping the free ones, once
// the rows in use have shrunk to a quarter of their peak.
func (h *holders) compact() {
	if !h.rowsPeak.shrunk(len(h.rows)) {
		return
	}
	rows := make(map[uint64]uint32, len(h.rows))
	bits := make([]uint64, 0, len(h.rows)*h.stride)
	for hash, r := range h.rows {
		rows[hash] = uint32(len(bits) / h.stride)
		bits = append(bits, h.row(r)...)
	}
	h.rows, h.bits, h.free = rows, bits, nil
}

// depths sets depth[s], for every slot s below len(depth), to the number
// of leading hashes of seq that slot s holds, and returns where the walk
// ended: the first hash of seq no slot holds (len(seq) when every slot
// that held the rest held it all), or -1 when it stopped at a hash some
// slot holds but none of those that held every hash before it, which a
// prefix-closed table never has (load.go: only an add of a list that is
// not a chain makes one). alive is scratch of at least stride words. Only
// as many hashes are looked up as some slot still holds in a row.
func (h *holders) depths(seq []uint64, depth []uint32, alive []uint64) int {
	clear(depth)
	if len(seq) == 0 {
		return 0
	}
	r, ok := h.rows[seq[0]]
	if !ok {
		return 0
	}
	alive = alive[:h.stride]
	copy(alive, h.row(r))
	for i := 1; i < len(seq); i++ {
		r, ok := h.rows[seq[i]]
		if !ok {
			markDepth(depth, alive, uint32(i))
			return i
		}
		row := h.row(r)
		var still uint64
		for k, a := range alive {
			// Slots that held every hash so far but not this one stop here.
			for gone := a &^ row[k]; gone != 0; gone &= gone - 1 {
				depth[k*64+bits.TrailingZeros64(gone)] = uint32(i)
			}
			alive[k] = a & row[k]
			still |= alive[k]
		}
		if still == 0 {
			return -1
		}
	}
	markDepth(depth, alive, uint32(len(seq)))
	return len(seq)
}

// firstUnheld is where depths' walk would end for seq, asked without the
// slots: the first hash of seq with no row (len(seq): none).
func (h *holders) firstUnheld(seq []uint64) int {
	for i, hash := range seq {
		if _, ok := h.rows[hash]; !ok {
			return i
		}
	}
	return len(seq)
}

// markDepth sets depth d for every slot in set.
func markDepth(depth []uint32, set []uint64, d uint32) {
	for k, w := range set {
		for ; w != 0; w &= w - 1 {
			depth[k*64+bits.TrailingZeros64(w)] = d
		}
	}
}
