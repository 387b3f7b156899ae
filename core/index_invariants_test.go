package core

import (
	"fmt"
	"slices"
)

// checkInvariants verifies the index's internal consistency: the runs,
// their segments, their holders and links, the lookups and the aliases
// all describe one forest, with no cycle, no empty run, no unheld block
// and no stale entry.
func checkInvariants(x *Index) error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	t := &x.t
	if err := checkRuns(t); err != nil {
		return err
	}
	if err := checkSegments(t); err != nil {
		return err
	}
	return checkWorkers(t)
}

func checkRuns(t *tree) error {
	free := 0
	for id := t.runFree; id != noRun; id = t.runs.at(id).next {
		if t.runs.at(id).flags&runLive != 0 {
			return fmt.Errorf("run %d is live and on the free list", id)
		}
		if free++; free > t.runs.len() {
			return fmt.Errorf("free run list has a cycle")
		}
	}
	root := t.runs.at(rootRun)
	if root.flags&runLive == 0 || root.len() != 0 || len(root.holders) != 0 || root.parent != noRun {
		return fmt.Errorf("root run is %+v", *root)
	}
	live, blocks := 0, uint64(0)
	for i := range t.runs.len() {
		id := uint32(i)
		r := t.runs.at(id)
		if r.flags&runLive == 0 {
			continue
		}
		if err := checkChildren(t, id); err != nil {
			return err
		}
		if id == rootRun {
			continue
		}
		live++
		blocks += uint64(r.len())
		if err := checkRun(t, id); err != nil {
			return err
		}
	}
	if uint64(blocks) != t.live {
		return fmt.Errorf("the tree counts %d blocks, its runs hold %d", t.live, blocks)
	}
	if err := checkRootFilter(t); err != nil {
		return err
	}
	if live+free+1 != t.runs.len() {
		return fmt.Errorf("%d live runs, %d free, %d in all", live, free, t.runs.len())
	}
	return nil
}

// checkRun verifies one run: its place in its segment, its key, its
// holders (sorted, prefixes, the longest its length) and its parent link.
func checkRun(t *tree, id uint32) error {
	r := t.runs.at(id)
	if r.seg == 0 || int(r.seg) >= t.segs.len() {
		return fmt.Errorf("run %d is in segment %d of %d", id, r.seg, t.segs.len())
	}
	s := t.segs.at(r.seg)
	if r.lo >= r.hi || r.lo < s.base || r.hi > s.end() {
		return fmt.Errorf("run %d covers [%d, %d) of a segment holding [%d, %d)", id, r.lo, r.hi, s.base, s.end())
	}
	if !slices.Contains(s.runs, segRun{r.lo, id}) {
		return fmt.Errorf("run %d is not listed by its segment %d at %d", id, r.seg, r.lo)
	}
	if r.lp != &s.locals[r.lo-s.base] {
		return fmt.Errorf("run %d's view of its hashes is not at its first block", id)
	}
	if r.key != t.localOf(r.first()) {
		return fmt.Errorf("run %d has key %d, its first block local %d", id, r.key, t.localOf(r.first()))
	}
	if len(r.holders) == 0 {
		return fmt.Errorf("run %d is live with no holder", id)
	}
	longest := uint32(0)
	for i, h := range r.holders {
		if i > 0 && r.holders[i-1].wi >= h.wi {
			return fmt.Errorf("run %d: holders %v not sorted", id, r.holders)
		}
		if h.cut == 0 || h.cut > r.len() {
			return fmt.Errorf("run %d of %d blocks: holder %d holds %d", id, r.len(), h.wi, h.cut)
		}
		if int(h.wi) >= len(t.workers) || !t.workers[h.wi].live {
			return fmt.Errorf("run %d is held by dead worker %d", id, h.wi)
		}
		longest = max(longest, h.cut)
	}
	if longest != r.len() {
		return fmt.Errorf("run %d has %d blocks, its holders hold %d", id, r.len(), longest)
	}
	if r.parent != noRun {
		if int(r.parent) >= t.runs.len() || t.runs.at(r.parent).flags&runLive == 0 {
			return fmt.Errorf("run %d has a free parent %d", id, r.parent)
		}
		if got := t.childRun(r.parent, r.key); got != id {
			return fmt.Errorf("run %d is not its parent %d's child under %d (found %d)", id, r.parent, r.key, got)
		}
	}
	steps := 0
	for a := id; a != noRun; a = t.runs.at(a).parent {
		if steps++; steps > t.runs.len() {
			return fmt.Errorf("run %d is on a cycle", id)
		}
	}
	return nil
}

// checkRootFilter verifies the root's filter against its children: each
// counter holds what the children count in it, or is saturated (and then
// at least as many count in it as when it saturated: some, when it ever
// reached counterMax with them).
func checkRootFilter(t *tree) error {
	f := &t.rootFilter
	onCursor := f.cursor == noRun
	counted := []uint64{}
	for c := t.runs.at(rootRun).firstChild; c != noRun; c = t.runs.at(c).next {
		onCursor = onCursor || c == f.cursor
		if t.runs.at(c).isCounted(f.counted) {
			counted = append(counted, t.runs.at(c).key)
		} else if !f.rebuilding {
			return fmt.Errorf("root child %d is not counted, and no rebuild is under way", c)
		}
	}
	if f.rebuilding {
		if !onCursor {
			return fmt.Errorf("the root filter's rebuild is at run %d, no root child", f.cursor)
		}
		if f.next != nil {
			if len(counted) != f.nextKeys {
				return fmt.Errorf("the root filter being rebuilt counts %d keys, %d children are counted in it", f.nextKeys, len(counted))
			}
			if err := checkFilterWords(f.next, counted); err != nil {
				return fmt.Errorf("the root filter being rebuilt: %w", err)
			}
		}
	}
	ws := f.current()
	if ws == nil {
		return nil
	}
	keys := []uint64{}
	for c := t.runs.at(rootRun).firstChild; c != noRun; c = t.runs.at(c).next {
		keys = append(keys, t.runs.at(c).key)
	}
	if len(keys) != f.keys {
		return fmt.Errorf("the root filter counts %d keys, the root has %d children", f.keys, len(keys))
	}
	return checkFilterWords(ws, keys)
}

// checkFilterWords verifies a filter's counters against the keys it
// counts: each counter holds what they count in it, or is saturated (and
// then at least as many count in it as when it saturated: some, when it
// ever reached counterMax with them).
func checkFilterWords(ws filterWords, keys []uint64) error {
	want := make([][16]int, len(ws))
	for _, k := range keys {
		i, shifts := ws.counters(k)
		for _, sh := range shifts {
			want[i][sh/4]++
		}
	}
	for i, w := range ws {
		for j := range 16 {
			got := int(w >> (4 * j) & counterMax)
			if got != min(want[i][j], counterMax) && got != counterMax {
				return fmt.Errorf("root filter word %d counter %d is %d, its children count %d", i, j, got, want[i][j])
			}
		}
	}
	return nil
}

// checkChildren verifies a run's sibling list against the children's
// parent links, its child count and its child map.
func checkChildren(t *tree, id uint32) error {
	r := t.runs.at(id)
	count, prev := 0, noRun
	for c := r.firstChild; c != noRun; c = t.runs.at(c).next {
		cr := t.runs.at(c)
		if cr.flags&runLive == 0 || cr.parent != id || cr.prev != prev {
			return fmt.Errorf("child %d of %d has parent %d, prev %d (want %d)", c, id, cr.parent, cr.prev, prev)
		}
		if id == rootRun && !t.rootFilter.mayHold(cr.key) {
			return fmt.Errorf("root child %d (key %d) is missing from the root filter", c, cr.key)
		}
		prev = c
		if count++; count > t.runs.len() {
			return fmt.Errorf("sibling list of %d has a cycle", id)
		}
	}
	if r.childMap == 0 && int(r.kids) != count {
		return fmt.Errorf("run %d: counts %d children, list %d", id, r.kids, count)
	}
	if r.childMap != 0 {
		m := &t.childMaps[r.childMap]
		if m.len() != count {
			return fmt.Errorf("run %d: child map has %d entries, list %d", id, m.len(), count)
		}
		if err := checkHashTable(m); err != nil {
			return fmt.Errorf("run %d's child map: %w", id, err)
		}
	}
	return nil
}

// checkSegments verifies that each segment lists its runs in order,
// without overlap, and that free segments hold nothing.
func checkSegments(t *tree) error {
	free := map[uint32]bool{}
	for _, sid := range t.freeSegs {
		if free[sid] || sid == 0 {
			return fmt.Errorf("segment %d is free twice (or is 0)", sid)
		}
		free[sid] = true
	}
	for i := 1; i < t.segs.len(); i++ {
		sid := uint32(i)
		s := t.segs.at(sid)
		if s.end() > t.maxPositions() {
			return fmt.Errorf("segment %d ends at position %d, past the last (%d)", sid, s.end(), t.maxPositions())
		}
		if len(s.locals) != len(s.exts) {
			return fmt.Errorf("segment %d has %d locals, %d externals", sid, len(s.locals), len(s.exts))
		}
		if free[sid] != (len(s.runs) == 0) {
			return fmt.Errorf("segment %d: free %v, runs %v", sid, free[sid], s.runs)
		}
		end := uint32(0)
		for j, e := range s.runs {
			r := t.runs.at(e.id)
			if r.flags&runLive == 0 || r.seg != sid || r.lo != e.lo {
				return fmt.Errorf("segment %d lists run %d at %d, which is %+v", sid, e.id, e.lo, *r)
			}
			if j > 0 && e.lo < end {
				return fmt.Errorf("segment %d: run %d at %d overlaps the run before (to %d)", sid, e.id, e.lo, end)
			}
			end = r.hi
		}
	}
	return nil
}

// checkWorkers verifies every worker's names and ghosts against the
// runs' holders: each block a worker holds is named by exactly one of its
// names or held unnamed, never both; and the aliases.
func checkWorkers(t *tree) error {
	workers := 0
	for wi := range t.workers {
		ws := &t.workers[wi]
		if !ws.live {
			continue
		}
		workers++
		if t.index[ws.w] != uint32(wi) {
			return fmt.Errorf("worker %v is not interned as %d", ws.w, wi)
		}
		var err error
		ks := t.nameKeys(uint32(wi))
		ws.lookup.each(func(b blockRef) {
			switch {
			case err != nil:
			case !liveBlock(t, b) || !t.holds(b, uint32(wi)):
				err = fmt.Errorf("%v names block %x, which it does not hold", ws.w, b)
			default:
				if got, ok := ws.lookup.get(t.name(b, uint32(wi)), &ks); !ok || blockRef(got&^slotAliased) != b {
					err = fmt.Errorf("%v's lookup holds block %x, but its name %d finds %x (%v)", ws.w, b, t.name(b, uint32(wi)), got, ok)
				}
			}
		})
		if err != nil {
			return err
		}
		for b := range ws.ghosts {
			if !liveBlock(t, b) || !t.holds(b, uint32(wi)) {
				return fmt.Errorf("%v holds block %x unnamed, but its run does not list it", ws.w, b)
			}
		}
		if err := checkNameTable(&ws.lookup, &ks); err != nil {
			return fmt.Errorf("%v: %w", ws.w, err)
		}
	}
	if workers != len(t.index) || workers != len(t.order) {
		return fmt.Errorf("%d live workers, %d interned, %d ordered", workers, len(t.index), len(t.order))
	}
	if !slices.IsSortedFunc(t.order, func(a, b uint32) int { return t.workers[a].w.Compare(t.workers[b].w) }) {
		return fmt.Errorf("worker order is not sorted")
	}
	// Every held block, named exactly once or unnamed.
	for i := 1; i < t.runs.len(); i++ {
		r := t.runs.at(uint32(i))
		if r.flags&runLive == 0 {
			continue
		}
		for _, h := range r.holders {
			for off := range h.cut {
				b := mkRef(r.seg, r.lo+off)
				ks := t.nameKeys(h.wi)
				got, named := t.workers[h.wi].lookup.get(t.name(b, h.wi), &ks)
				named = named && blockRef(got&^slotAliased) == b
				if named == t.isGhost(h.wi, b) {
					return fmt.Errorf("block %x: holder %v names it %v, holds it unnamed %v (want exactly one)", b, t.workers[h.wi].w, named, t.isGhost(h.wi, b))
				}
			}
		}
	}
	for k, h := range t.aliases {
		if !liveBlock(t, k.b) {
			return fmt.Errorf("alias %d of worker %d for dead block %x", h, k.wi, k.b)
		}
		id, _ := t.runAt(k.b)
		if t.runs.at(id).flags&runAlias == 0 || !t.holds(k.b, k.wi) || h == t.extOf(k.b) {
			return fmt.Errorf("stale alias %d of worker %d for block %x", h, k.wi, k.b)
		}
	}
	return nil
}

// liveBlock reports whether b is a block of a live run.
func liveBlock(t *tree, b blockRef) bool {
	if b.seg() == 0 || int(b.seg()) >= t.segs.len() || len(t.segs.at(b.seg()).runs) == 0 {
		return false
	}
	s := t.segs.at(b.seg())
	if b.pos() < s.runs[0].lo {
		return false
	}
	id, off := t.runAt(b)
	return off < t.runs.at(id).len()
}

// checkHashTable verifies a table: its counts (entries, tombstones and
// room left agree, the load stays at most 7/8), each full slot's tag,
// and that every key is found where it is; and those of the table it is
// draining (hashTable.old), if any.
func checkHashTable(m *hashTable) error {
	n, tombs, err := checkHashGroups(m, m, 0)
	if err != nil {
		return err
	}
	inOld := 0
	if m.old != nil {
		if inOld, _, err = checkHashGroups(m, m.old, atOld); err != nil {
			return fmt.Errorf("old table: %w", err)
		}
		if inOld != m.old.count || int(m.drainAt) >= len(m.old.groups) {
			return fmt.Errorf("old table counts %d entries, holds %d, drained to group %d of %d", m.old.count, inOld, m.drainAt, len(m.old.groups))
		}
	}
	slots := len(m.groups) * groupSlots
	if n != m.count || m.growthLeft != slots*3/4-n-tombs-inOld || m.growthLeft < 0 {
		return fmt.Errorf("table counts %d entries and room for %d, holds %d (and %d in old) and %d tombstones in %d slots", m.count, m.growthLeft, n, inOld, tombs, slots)
	}
	return nil
}

// checkHashGroups checks the groups of t, m itself or m.old (then
// flagged atOld), and returns how many entries and tombstones they hold.
func checkHashGroups(m, t *hashTable, flag int) (n, tombs int, err error) {
	for gi := range t.groups {
		g := &t.groups[gi]
		if g.ctrl>>56 != ctrlDeleted {
			return 0, 0, fmt.Errorf("group %d's spare control byte is %#x", gi, g.ctrl>>56)
		}
		for i := range groupSlots {
			switch c := g.ctrl >> (8 * i) & 0xff; {
			case c == ctrlEmpty:
			case c == ctrlDeleted:
				tombs++
			case c < 0x80:
				n++
				k := g.keys[i]
				if c != hashOf(k)&0x7f {
					return 0, 0, fmt.Errorf("key %d in group %d slot %d has tag %#x, want %#x", k, gi, i, c, hashOf(k)&0x7f)
				}
				if _, ok, at := m.find(k); !ok || at != gi<<slotShift|i|flag {
					return 0, 0, fmt.Errorf("key %d in group %d slot %d is found %v at %#x", k, gi, i, ok, at)
				}
				if g.vals[i] == 0 {
					return 0, 0, fmt.Errorf("key %d has value 0", k)
				}
			default:
				return 0, 0, fmt.Errorf("group %d slot %d has control byte %#x", gi, i, c)
			}
		}
	}
	return n, tombs, nil
}

// checkNameTable checks a name table's layout: every entry's tag, that
// find finds it where it is, that the aliased mark agrees with the
// tree's, the counts, and every half's overflow count (recounted from
// each entry's probe, unless saturated). A table being drained
// (nameTable.old) is checked too.
func checkNameTable(m *nameTable, ks *nameKeys) error {
	n, err := checkNameHalves(m, m, ks, 0)
	if err != nil {
		return err
	}
	inOld := 0
	if m.old != nil {
		if inOld, err = checkNameHalves(m, m.old, ks, atOld); err != nil {
			return fmt.Errorf("old table: %w", err)
		}
		if inOld != m.old.count || int(m.drainAt) >= len(m.old.halves) {
			return fmt.Errorf("old table counts %d entries, holds %d, drained to half %d of %d", m.old.count, inOld, m.drainAt, len(m.old.halves))
		}
	}
	if n != m.count || m.growthLeft != m.capacity(len(m.halves))-n-inOld {
		return fmt.Errorf("table counts %d entries and room for %d, holds %d (and %d in old) in %d halves", m.count, m.growthLeft, n, inOld, len(m.halves))
	}
	return nil
}

// checkNameHalves checks the halves of t, m itself or m.old (then
// flagged atOld), and returns how many entries they hold.
func checkNameHalves(m, t *nameTable, ks *nameKeys, flag int) (int, error) {
	n := 0
	overflows := make([]int, len(t.halves))
	for i := range t.halves {
		hf := &t.halves[i]
		for j := range groupSlots {
			switch c := hf.ctrl >> (8 * j) & 0xff; {
			case c == 0:
				if hf.slots[j] != 0 {
					return 0, fmt.Errorf("empty slot %d of half %d holds %x", j, i, hf.slots[j])
				}
			default:
				n++
				w := hf.slots[j]
				v := w &^ slotMeta
				k := ks.of(v)
				if home := uint(hashOf(k)>>t.shift) == uint(i); w != slotWord(v, hashOf(k), home) {
					return 0, fmt.Errorf("name %d in half %d slot %d (home %v) keeps %#x", k, i, j, home, w)
				}
				if c != slotUsed|hashOf(k)&0x7f {
					return 0, fmt.Errorf("name %d in half %d slot %d has control byte %#x, want %#x", k, i, j, c, slotUsed|hashOf(k)&0x7f)
				}
				if _, aliased := ks.aliases[aliasKey{blockRef(v &^ slotAliased), ks.wi}]; aliased != (v&slotAliased != 0) {
					return 0, fmt.Errorf("name %d in half %d slot %d: aliased mark %v, alias in the tree %v", k, i, j, v&slotAliased != 0, aliased)
				}
				if _, ok, at := m.find(k, ks); !ok || at != i<<slotShift|j|flag {
					return 0, fmt.Errorf("name %d in half %d slot %d is found %v at %#x", k, i, j, ok, at)
				}
				p := t.probeOf(hashOf(k))
				for h := p.h; h != uint(i); h = p.next() {
					overflows[h]++
				}
			}
		}
	}
	for i := range t.halves {
		if got := int(t.halves[i].ctrl >> 56); got != 255 && got != overflows[i] {
			return 0, fmt.Errorf("half %d counts %d overflows, %d names passed it", i, got, overflows[i])
		}
	}
	return n, nil
}
