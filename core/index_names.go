package core

import (
	"math/bits"
	"unsafe"
)

// nameTable is a worker's names: its external hashes -> the blocks it
// holds by them. It is the index's hottest structure (on the replayed
// traces nearly every stored and removed block is one insert or delete in
// a table larger than the cache), so it is built to touch one cache line
// per operation:
//
//   - A slot holds only the block (8 bytes), not the name: the name is
//     the block's own external hash, kept in its segment, or, for the rare
//     holder that names a block otherwise (slotAliased), its alias. A
//     lookup checks a candidate's name there; a 7-bit tag per slot makes a
//     candidate that is not the name rare (a few per hundred lookups).
//   - Slots come in halves of seven with their control word: 64 bytes,
//     one line. Two halves make a bucket; a key's home is one half, its
//     bucket's other half the first place it overflows to, and a caller
//     prefetches the bucket (both lines) ahead of the lookup.
//   - Instead of tombstones, each half counts the names that overflowed
//     past it (as Facebook's F14 does): a lookup stops at the first half
//     without the key whose count is zero, and a delete simply empties
//     its slot. Engines evict as fast as they store, and tombstones would
//     fill exactly the groups that are busiest.
//
// The cost of not holding the names: growing the table must place each
// entry by its name's hash. The slot keeps the few bits of it that
// growth needs (slotMeta), so only the rare entry not in its home half
// (or any, in a table too small or too large for those bits) has its
// name read back from its block, which grow prefetches.
type nameTable struct {
	halves     []nameHalf // a power of two of them, at least two; or none
	count      int
	growthLeft int   // inserts before the table must grow (capacity - count; at most 0: the next)
	turned     int   // deletes since the table last grew or turned over
	shift      uint8 // 64 - log2(len(halves))
	churned    bool  // the table turned over at a steady size: its load is kept lower (capacity)
	// old is the table a growth left to drain into halves, a few halves
	// at a time (index_names_drain.go); nil when none. While it is there,
	// count is the names in halves, old.count the names still in old,
	// and growthLeft counts both.
	old *nameTable
	// drainAt is old's next half to move; credit the mutations since the
	// last move.
	drainAt, credit int32
	// next brings the halves of the next growth, made off the lock
	// (prepareGrowth); nil when none were asked for.
	next chan []nameHalf
}

type nameHalf struct {
	// ctrl has one byte per slot, 0 when it is empty, else slotUsed |
	// the tag of the slot's name (its hash's low 7 bits), and in its top
	// byte the half's overflow count (saturating: at 255 it stays). An
	// empty half is all zeros, so a new table needs no pass to set it up
	// beyond the allocator's zeroing.
	ctrl  uint64
	slots [groupSlots]uint64 // slotAliased | slotMeta's bits | blockRef
}

// slotAliased marks a slot whose block the worker names by an alias
// (tree.aliases), not by the block's external hash.
const slotAliased = 1 << 63

// A slot keeps, beside its block, what growing the table needs to know
// to move it without reading its name back: whether it is in its name's
// home half (slotDisplaced: not), and the slotHashBits bits of the name's
// hash from slotHashLo up, which pick its home in tables from
// 1<<(64-slotHashLo-slotHashBits) to 1<<(64-slotHashLo) halves (16 KiB to
// 1 MiB). They sit in the bits block refs leave free (a segment id is
// below maxSegments, a position below maxPositions): the low four at
// slotHashLowShift, the top two at slotHashTopShift.
const (
	slotDisplaced    = 1 << 62
	slotHashBits     = 6
	slotHashLo       = 50
	slotHashLowShift = 28
	slotHashTopShift = 60
	slotHashMask     = 0xf<<slotHashLowShift | 3<<slotHashTopShift
	slotMeta         = slotDisplaced | slotHashMask
)

// slotHashOf returns the bits of hash h a slot keeps, in place.
func slotHashOf(h uint64) uint64 {
	g := h >> slotHashLo
	return (g&0xf)<<slotHashLowShift | (g>>4&3)<<slotHashTopShift
}

// slotHashBitsOf returns the hash bits slot w keeps, as a number: bit i
// is the hash's bit slotHashLo+i.
func slotHashBitsOf(w uint64) uint {
	return uint(w>>slotHashLowShift&0xf | (w>>slotHashTopShift&3)<<4)
}

// slotWord is the slot of entry v, whose name's hash is h: in its home
// half, or not.
func slotWord(v, h uint64, home bool) uint64 {
	w := v | slotHashOf(h)
	if !home {
		w |= slotDisplaced
	}
	return w
}

// candidates returns the slots of hf (as the high bits of their control
// bytes) that may hold the name of a hash with tags (its control byte in
// every byte) and bits (slotHashOf): those whose tag and kept hash bits
// both agree, 13 bits in all, so that a name is read back to compare it
// about once in a thousand candidates but for the name itself.
func (hf *nameHalf) candidates(tags, bits uint64) uint64 {
	x := hf.ctrl ^ tags
	c := (x - bytesLSB) &^ x & slotsMSB
	for m := c; m != 0; m &= m - 1 {
		if j := firstByte(m); j >= groupSlots || (hf.slots[j]^bits)&slotHashMask != 0 {
			c &^= slotUsed << (8 * j)
		}
	}
	return c
}

const (
	slotUsed     = 0x80
	overflowUnit = 1 << 56
	overflowMax  = 0xff << 56
)

// nameKeys reads names back from the tree for worker wi.
type nameKeys struct {
	segs    *chunked[blockSegment]
	aliases map[aliasKey]uint64
	wi      uint32
	// scratch is grow's memory, kept by the tree for the next growth (of
	// any worker); nil: grow allocates its own.
	scratch *[]nameEntry
}

func (t *tree) nameKeys(wi uint32) nameKeys {
	return nameKeys{segs: &t.segs, aliases: t.aliases, wi: wi, scratch: &t.nameScratch}
}

// of returns the name a slot's entry stands for.
func (ks *nameKeys) of(v uint64) uint64 {
	b := blockRef(v &^ (slotAliased | slotMeta))
	if v&slotAliased != 0 {
		return ks.aliases[aliasKey{b, ks.wi}]
	}
	s := ks.segs.at(b.seg())
	return s.exts[b.pos()-s.base]
}

func (m *nameTable) len() int {
	if m.old != nil {
		return m.count + m.old.count
	}
	return m.count
}

// probe is the sequence of halves a key visits: its home, its bucket's
// other half, then the halves of buckets at triangular steps (which reach
// every bucket of a power-of-two table), the home side of each first.
type probe struct {
	h, mask, side uint
	bucket, step  uint
}

func (m *nameTable) probeOf(h uint64) probe {
	home := uint(h >> m.shift)
	return probe{h: home, mask: uint(len(m.halves)/2 - 1), side: home & 1, bucket: home >> 1}
}

// next moves p to the next half and returns its index.
func (p *probe) next() uint {
	if p.h&1 == p.side {
		p.h ^= 1
		return p.h
	}
	p.step++
	p.bucket = (p.bucket + p.step) & p.mask
	p.h = p.bucket<<1 | p.side
	return p.h
}

// find looks k up. at is its slot (half<<slotShift | slot) when found;
// when k is absent it is the first free slot on k's probe, where insertAt
// puts it, provided the table did not change in between (-1: none).
func (m *nameTable) find(k uint64, ks *nameKeys) (v uint64, ok bool, at int) {
	if len(m.halves) == 0 {
		return 0, false, -1
	}
	h := hashOf(k)
	tags, bits := bytesLSB*(slotUsed|h&0x7f), slotHashOf(h)
	p := m.probeOf(h)
	free := -1
	// The counts end every probe of an absent key but in a pathological
	// table (each half passed by some overflow): then it stops when it
	// has seen every half.
	for i, seen := p.h, 0; seen < len(m.halves); i, seen = p.next(), seen+1 {
		hf := &m.halves[i]
		ctrl := hf.ctrl
		for c := hf.candidates(tags, bits); c != 0; c &= c - 1 {
			if j := firstByte(c); j < groupSlots && ks.of(hf.slots[j]) == k {
				return hf.slots[j] &^ slotMeta, true, int(i)<<slotShift | j
			}
		}
		if free < 0 {
			if f := ^ctrl & slotsMSB; f != 0 {
				free = int(i)<<slotShift | firstByte(f)
			}
		}
		if ctrl&overflowMax == 0 {
			break
		}
	}
	if m.old != nil {
		if v, ok, at := m.old.find(k, ks); ok {
			return v, true, at | atOld
		}
	}
	return 0, false, free
}

// atOld marks a slot position (find's at) in the table being drained,
// m.old, rather than in m's own halves.
const atOld = 1 << 30

// take removes k, a name expected to be there (a removal's), and
// returns its entry. Its home half, checked first without the general
// probe's bookkeeping, is where it nearly always is, and a name taken
// from there passed no other half on its way in. guess is the block the
// caller expects k to name, with its own name (no guess: noRef): a
// candidate that is that block is checked against that name, without
// reading the block's segment.
func (m *nameTable) take(k uint64, ks *nameKeys, guess blockRef, guessName uint64) (v uint64, ok bool) {
	if len(m.halves) == 0 {
		return 0, false
	}
	h := hashOf(k)
	hf := &m.halves[uint(h>>m.shift)]
	ctrl := hf.ctrl
	for c := hf.candidates(bytesLSB*(slotUsed|h&0x7f), slotHashOf(h)); c != 0; c &= c - 1 {
		j := uint(firstByte(c))
		if j >= groupSlots {
			continue // (never: lets the compiler drop the bounds checks)
		}
		w := hf.slots[j]
		if w&^slotMeta == uint64(guess) {
			if guessName != k {
				continue
			}
		} else if ks.of(w) != k {
			continue
		}
		hf.ctrl = ctrl &^ (0xff << (8 * j))
		hf.slots[j] = 0
		m.deleted()
		if m.old != nil {
			m.drainSome(ks)
		}
		return w &^ slotMeta, true
	}
	if ctrl&overflowMax == 0 && m.old == nil {
		return 0, false
	}
	v, ok, at := m.find(k, ks)
	if ok {
		m.delAt(at, k)
		if m.old != nil {
			m.drainSome(ks)
		}
	}
	return v, ok
}

func (m *nameTable) get(k uint64, ks *nameKeys) (uint64, bool) {
	v, ok, _ := m.find(k, ks)
	return v, ok
}

// insertAt puts k -> v, k absent, into the free slot at that find
// returned, counting the overflow on every half k's probe passes on the
// way. It reports false (doing nothing) when the table must grow first or
// at is -1; the caller then uses put.
func (m *nameTable) insertAt(at int, k, v uint64) bool {
	if at < 0 || m.growthLeft <= 0 {
		return false
	}
	half := uint(at) >> slotShift
	j := uint(at) & (1<<slotShift - 1)
	h := hashOf(k)
	home := uint(h>>m.shift) == half
	if !home {
		m.countOverflows(h, half, overflowUnit)
	}
	hf := &m.halves[half]
	setCtrl(&hf.ctrl, j, slotUsed|h&0x7f)
	hf.slots[j] = slotWord(v, h, home)
	m.count++
	m.growthLeft--
	return true
}

// add puts k -> v unless k is there already, reporting whether it was
// absent. The store of a new block does this for each of its names, so
// the common cases are written out, in the bucket the store prefetched:
// no candidate in k's home half, whose overflow count is zero (so k is
// nowhere else), or which some name passed but the bucket's other half,
// where the probe goes next, holds no candidate and stops it.
func (m *nameTable) add(k, v uint64, ks *nameKeys) bool {
	if len(m.halves) > 0 && m.growthLeft > 0 {
		h := hashOf(k)
		i := uint(h >> m.shift)
		hf := &m.halves[i]
		ctrl := hf.ctrl
		tag := slotUsed | h&0x7f
		tags, bits := bytesLSB*tag, slotHashOf(h)
		if hf.candidates(tags, bits) == 0 {
			absent := ctrl&overflowMax == 0
			if !absent {
				pf := &m.halves[i^1]
				absent = pf.ctrl&overflowMax == 0 && pf.candidates(tags, bits) == 0
			}
			if absent && m.old != nil {
				absent = m.old.surelyAbsent(h, tags, bits)
			}
			if absent {
				if j := uint(firstByte(^ctrl & slotsMSB)); j < groupSlots { // a free slot
					hf.ctrl = ctrl&^(0xff<<(8*j)) | tag<<(8*j)
					hf.slots[j] = slotWord(v, h, true)
					m.count++
					m.growthLeft--
				} else {
					m.insertNew(k, v) // its home is full: it overflows
				}
				if m.old != nil {
					m.drainSome(ks)
				}
				return true
			}
		}
	}
	_, ok, at := m.find(k, ks)
	if ok {
		return false
	}
	m.insertAbsent(at, k, v, ks)
	if m.old != nil {
		m.drainSome(ks)
	}
	return true
}

// surelyAbsent reports whether the table's bucket for hash h (with tags
// and bits, as add computes them) shows a name of that hash absent: no
// candidate in its home half, and no name passed that, or none in the
// bucket's other half, where the probe goes next, and none passed it.
func (m *nameTable) surelyAbsent(h, tags, bits uint64) bool {
	i := uint(h >> m.shift)
	hf := &m.halves[i]
	if hf.candidates(tags, bits) != 0 {
		return false
	}
	if hf.ctrl&overflowMax == 0 {
		return true
	}
	pf := &m.halves[i^1]
	return pf.ctrl&overflowMax == 0 && pf.candidates(tags, bits) == 0
}

// insertAbsent puts k -> v, k absent, at the slot find gave (at), or,
// the table full or no free slot before the probe's end, further on.
func (m *nameTable) insertAbsent(at int, k, v uint64, ks *nameKeys) {
	if m.insertAt(at, k, v) {
		return
	}
	if m.growthLeft <= 0 {
		m.grow(m.len()+1, ks)
	}
	m.insertNew(k, v)
}

// put sets k to v.
func (m *nameTable) put(k, v uint64, ks *nameKeys) {
	_, ok, at := m.find(k, ks)
	if ok {
		halves := m.halves
		if at&atOld != 0 {
			halves, at = m.old.halves, at&^atOld
		}
		w := &halves[uint(at)>>slotShift].slots[uint(at)&(1<<slotShift-1)]
		*w = *w&slotMeta | v
		return
	}
	m.insertAbsent(at, k, v, ks)
	if m.old != nil {
		m.drainSome(ks)
	}
}

// insertNew puts k, known absent, into a table with room for it.
func (m *nameTable) insertNew(k, v uint64) {
	h := hashOf(k)
	p := m.probeOf(h)
	home := p.h
	for i := p.h; ; i = p.next() {
		hf := &m.halves[i]
		if f := ^hf.ctrl & slotsMSB; f != 0 {
			setCtrl(&hf.ctrl, uint(firstByte(f)), slotUsed|h&0x7f)
			hf.slots[firstByte(f)] = slotWord(v, h, i == home)
			m.count++
			m.growthLeft--
			return
		}
		if hf.ctrl&overflowMax != overflowMax {
			hf.ctrl += overflowUnit
		}
	}
}

// countOverflows adds delta (one overflow, or minus one) to the count of
// every half the probe of hash h passes before reaching half, where its
// slot is; a saturated count stays. Callers skip it for a slot in its
// home half, the common case, which passes none.
func (m *nameTable) countOverflows(h uint64, half uint, delta uint64) {
	p := m.probeOf(h)
	for i := p.h; i != half; i = p.next() {
		if c := &m.halves[i].ctrl; *c&overflowMax != overflowMax {
			*c += delta
		}
	}
}

// del removes k, reporting whether it was there.
func (m *nameTable) del(k uint64, ks *nameKeys) bool {
	_, ok, at := m.find(k, ks)
	if ok {
		m.delAt(at, k)
		if m.old != nil {
			m.drainSome(ks)
		}
	}
	return ok
}

// delAt removes k, found in slot at: the slot becomes empty, and the
// halves k's probe passed on the way there count one overflow fewer.
func (m *nameTable) delAt(at int, k uint64) {
	if at&atOld != 0 {
		m.old.delAt(at&^atOld, k)
		m.freed()
		return
	}
	half := uint(at) >> slotShift
	j := uint(at) & (1<<slotShift - 1)
	if h := hashOf(k); uint(h>>m.shift) != half {
		m.countOverflows(h, half, ^uint64(overflowUnit-1)) // minus one overflow, modulo 2^64
	}
	hf := &m.halves[half]
	setCtrl(&hf.ctrl, j, 0)
	hf.slots[j] = 0
	m.deleted()
}

// deleted counts a name just taken out of its slot.
func (m *nameTable) deleted() {
	m.count--
	m.freed()
}

// freed counts a name taken out of the table, from its halves or old's.
func (m *nameTable) freed() {
	m.growthLeft++
	if m.turned++; m.turned >= m.len() {
		m.turnedOver()
	}
}

// turnedOver is told when the table has had as many deletes since it
// last grew (or was last told) as it holds names: it holds names at a
// steady number while they turn over, as a worker's does once its cache
// is full and it evicts as much as it stores. Such a table is kept at
// most half full from then on (capacity) rather than seven eighths. A
// table that only grows pays for its longer probes once a name; under
// churn every insert and delete pays them again: on the replayed traces a
// churned table at 57 % of its slots had one add in seven find its home
// half passed by another name, and one in thirteen probe past the bucket
// the store had prefetched (a fifth more apply throughput once it
// doubled). A table below nameChurnMin is left alone: its probes stay in
// the nearest caches, and doubling it would buy little for its memory.
func (m *nameTable) turnedOver() {
	if m.old != nil {
		// Not while draining: a lower capacity could make the next insert
		// grow the table before old is drained. The next delete asks
		// again.
		return
	}
	m.turned = 0
	if !m.churned && len(m.halves) >= nameChurnMin {
		m.churned = true
		m.growthLeft = m.capacity(len(m.halves)) - m.count // at most 0: the next insert grows it
	}
}

// nameChurnMin is the smallest table (64 KiB) that turnedOver keeps at a
// lower load: the size from which grow doubles (nameQuadrupleMax).
const nameChurnMin = nameQuadrupleMax

// reserve makes room for n more names at once: a store of n new blocks
// grows its worker's table once, to the size it needs. A large table
// close to growing has its next halves made meanwhile (prepareGrowth).
func (m *nameTable) reserve(n int, ks *nameKeys) {
	if n > m.growthLeft {
		m.grow(m.len()+n, ks)
		return
	}
	m.prepareGrowth()
}

// capacity is how many names the table holds in that many halves before
// it grows: seven eighths of its slots, or, once it has churned, half.
func (m *nameTable) capacity(halves int) int {
	if m.churned {
		return halves * groupSlots / 2
	}
	return halves * groupSlots * 7 / 8
}

// grow makes a table with room for need names: four times larger while
// it is small (under nameQuadrupleMax halves), twice beyond. A small
// table's entries move at once; a larger one's (nameDrainMin halves and
// up) a few halves at a time, by the mutations that follow
// (index_names_drain.go), so that no mutation pays for the whole table. A worker that grows keeps growing, and quadrupling moves each
// name about a third as often as doubling; past a few tens of kilobytes
// the memory (and its first-touch page faults) costs more than the moves
// saved, as measured on the replayed traces.
//
// In a small table that moves at once, an entry in its home half moves
// by the hash bits its slot keeps (moveHome), in one pass over the old
// table. The others (all of them outside the sizes those bits serve) have
// their names read back (place).
func (m *nameTable) grow(need int, ks *nameKeys) {
	if m.old != nil {
		// Growing again before old is drained (which the drain's pace
		// makes rare: TestNameTableGrowthIsIncremental): finish it first.
		for m.old != nil {
			m.drain(ks, nameDrainChunk)
		}
	}
	n := max(2, len(m.halves))
	for m.capacity(n) < need {
		if n < nameQuadrupleMax {
			n *= 4
		} else {
			n *= 2
		}
	}
	if len(m.halves) >= nameDrainMin {
		m.startDrain(n)
		return
	}
	old := m.halves
	m.halves = make([]nameHalf, n)
	m.shift = uint8(64 - bits.TrailingZeros(uint(n)))
	m.count = 0
	m.growthLeft = m.capacity(n)
	m.turned = 0
	if len(old) == 0 {
		return
	}
	var entries []nameEntry
	if ks.scratch != nil {
		entries = (*ks.scratch)[:0]
	}
	oldBits, newBits := bits.TrailingZeros(uint(len(old))), bits.TrailingZeros(uint(n))
	if oldBits >= 64-slotHashLo-slotHashBits && newBits <= 64-slotHashLo && newBits-oldBits <= 2 {
		// The slots say where their names go, but for the few not in
		// their home half: only those are read back below. (Only reserve
		// grows a table more than fourfold at once.)
		entries = m.moveHome(old, oldBits, newBits, entries)
	} else {
		for i := range old {
			hf := &old[i]
			for c := hf.ctrl & slotsMSB; c != 0; c &= c - 1 {
				entries = append(entries, nameEntry{v: hf.slots[firstByte(c)] &^ slotMeta})
			}
		}
	}
	m.place(entries, ks)
	// The scratch is kept (fresh pages cost a process that has just
	// started as much as the moves), unless it is large.
	if ks.scratch != nil && cap(entries) <= nameScratchMax {
		*ks.scratch = entries[:0]
	}
}

// place puts entries (their v set, k not yet), absent, into the table,
// which has room for them. Their names are read back, to hash them,
// before any is placed: a gather whose misses overlap, the segments of
// the entries 4*namePrefetch ahead and the names 2*namePrefetch ahead
// being fetched while the current one is read.
func (m *nameTable) place(entries []nameEntry, ks *nameKeys) {
	ks.readNames(entries)
	for _, e := range entries {
		m.insertNew(e.k, e.v)
	}
}

// readNames sets the names (k) of entries (v set, its slotMeta bits
// ignored), in a gather whose misses overlap.
func (ks *nameKeys) readNames(entries []nameEntry) {
	for i := 0; i < 4*namePrefetch; i += namePrefetch {
		ks.prefetchSegments(entries, i)
	}
	for i := 0; i < 2*namePrefetch; i += namePrefetch {
		ks.prefetchNames(entries, i)
	}
	for i := range entries {
		if i%namePrefetch == 0 {
			ks.prefetchSegments(entries, i+4*namePrefetch)
			ks.prefetchNames(entries, i+2*namePrefetch)
		}
		entries[i].k = ks.of(entries[i].v)
	}
}

// moveHome moves the entries of old (of 1<<oldBits halves) that are in
// their home half into m (of 1<<newBits, empty, at most four times as
// many), by the hash bits their slots keep, and appends the others to
// rest. The entries of one old half go to the halves its own index
// prefixes, which no other's do, so each finds room in its new home, and
// those halves' control words are built aside and written once.
func (m *nameTable) moveHome(old []nameHalf, oldBits, newBits int, rest []nameEntry) []nameEntry {
	k := uint(newBits - oldBits)
	shift := uint(64 - slotHashLo - newBits)
	moved := 0
	for i := range old {
		hf := &old[i]
		c := hf.ctrl & slotsMSB
		if c == 0 {
			continue
		}
		dst := m.halves[uint(i)<<k : uint(i+1)<<k]
		var ctrls [4]uint64
		var fill [4]uint
		for ; c != 0; c &= c - 1 {
			j := firstByte(c)
			w := hf.slots[j]
			if w&slotDisplaced != 0 {
				rest = append(rest, nameEntry{v: w &^ slotMeta})
				continue
			}
			d := slotHashBitsOf(w) >> shift & (1<<k - 1) & 3
			f := fill[d] // below seven: the entries come from one old half
			dst[d].slots[f] = w
			ctrls[d] |= (hf.ctrl >> (8 * j) & 0xff) << (8 * f)
			fill[d] = f + 1
			moved++
		}
		for d := range dst {
			dst[d].ctrl = ctrls[d&3]
		}
	}
	m.count += moved
	m.growthLeft -= moved
	return rest
}

// nameScratchMax bounds the scratch the tree keeps: 1 MiB.
const nameScratchMax = 1 << 16

// nameQuadrupleMax is the table size (64 KiB) from which grow doubles.
const nameQuadrupleMax = 1024

type nameEntry struct{ v, k uint64 }

// namePrefetch is how many names grow fetches at once.
const namePrefetch = 8

// prefetchSegments starts fetching the segments of the blocks of
// vs[i:i+8], prefetchNames their external hashes (once their segments are
// in: the hash's address is in the segment).
func (ks *nameKeys) prefetchSegments(vs []nameEntry, i int) {
	if i >= len(vs) {
		return
	}
	var lines [8]unsafe.Pointer
	for j := range lines {
		b := blockRef(vs[min(i+j, len(vs)-1)].v &^ (slotAliased | slotMeta))
		lines[j] = unsafe.Pointer(ks.segs.at(b.seg()))
	}
	prefetch8(&lines)
}

func (ks *nameKeys) prefetchNames(vs []nameEntry, i int) {
	if i >= len(vs) {
		return
	}
	var lines [8]unsafe.Pointer
	for j := range lines {
		v := vs[min(i+j, len(vs)-1)].v
		b := blockRef(v &^ (slotAliased | slotMeta))
		s := ks.segs.at(b.seg())
		lines[j] = unsafe.Pointer(s)
		if v&slotAliased == 0 {
			lines[j] = unsafe.Pointer(&s.exts[b.pos()-s.base])
		}
	}
	prefetch8(&lines)
}

// homeAddr returns the address of k's home half, for prefetching; the
// table must not be empty.
func (m *nameTable) homeAddr(k uint64) unsafe.Pointer {
	return unsafe.Pointer(&m.halves[uint(hashOf(k)>>m.shift)])
}

// bucketAddr returns the address of k's bucket (both halves: 128 bytes),
// for prefetching; the table must not be empty.
func (m *nameTable) bucketAddr(k uint64) unsafe.Pointer {
	return unsafe.Pointer(&m.halves[uint(hashOf(k)>>m.shift)&^1])
}

// each calls f for every block the table holds (slotAliased cleared), in
// slot order; f must not change the table.
func (m *nameTable) each(f func(b blockRef)) {
	if m.old != nil {
		m.old.each(f)
	}
	for i := range m.halves {
		hf := &m.halves[i]
		for c := hf.ctrl & slotsMSB; c != 0; c &= c - 1 {
			f(blockRef(hf.slots[firstByte(c)] &^ (slotAliased | slotMeta)))
		}
	}
}

// reset empties the table, keeping its memory unless it is large.
func (m *nameTable) reset() {
	m.old, m.drainAt, m.credit, m.next = nil, 0, 0, nil
	if len(m.halves) > 256 {
		*m = nameTable{}
		return
	}
	clear(m.halves)
	*m = nameTable{halves: m.halves, shift: m.shift}
	m.growthLeft = m.capacity(len(m.halves))
}

// appendNamesAt appends the names and blocks of the entries in n halves
// of the table from position at (old's halves first, then the table's)
// to dst, and returns dst, the next position, and whether the table's end
// was reached. The table must not change between calls.
func (m *nameTable) appendNamesAt(dst []clearName, ks nameKeys, at, n int) ([]clearName, int, bool) {
	var oldHalves []nameHalf
	if m.old != nil {
		oldHalves = m.old.halves
	}
	total := len(oldHalves) + len(m.halves)
	end := min(total, at+n)
	for i := at; i < end; i++ {
		var hf *nameHalf
		if i < len(oldHalves) {
			hf = &oldHalves[i]
		} else {
			hf = &m.halves[i-len(oldHalves)]
		}
		for c := hf.ctrl & slotsMSB; c != 0; c &= c - 1 {
			v := hf.slots[firstByte(c)]
			dst = append(dst, clearName{name: ks.of(v), b: blockRef(v &^ (slotAliased | slotMeta))})
		}
	}
	return dst, end, end == total
}
