package core

import "sync/atomic"

// rootFilter is a counting Bloom filter over the local hashes of the
// root's children: a query (or a store) whose first block no run starts
// with is told so from the filter, eight to sixteen bytes a child and so
// mostly in cache, instead of by a probe into the root's child table, a
// cache miss. On the replayed traces about half of all routing probes
// start with a block no worker holds: a prompt nobody has sent, or one
// every worker has since evicted. (With half the queries missing, the
// median query's latency is the slow end of the misses: each key the
// filter lets by costs a lock and a probe of the table.)
//
// A key counts in three four-bit counters of one word (one memory access
// a lookup), and is let by when all three are above zero. A child that
// leaves the root counts down again, so the prompts evicted since the
// filter was built are told apart as surely as those never sent (a filter
// of plain bits would keep letting them by until it was rebuilt: on the
// replayed traces, a quarter of the misses). At one key to every one or
// two words, a few absent keys in a thousand are let by. A counter that
// reaches 15 stays there (counting on could wrap it to zero, and hide a
// child); a removal that finds one saturated is counted, and a filter
// with too many of those, or too many or too few keys for its size, is
// built again from the children: each rebuild is paid for by changes in
// proportion to what it reads.
//
// A match reads the filter without the index's lock (Index.AppendMatches:
// a query answered by the filter takes no lock at all). So its words are
// read and written atomically (writers, holding the lock, are one at a
// time), and a rebuild fills new words and then publishes them: a reader
// sees the old filter or the new, each counting every key linked before it
// was published and not unlinked since.
type rootFilter struct {
	words atomic.Pointer[filterWords] // nil: no filter, every key may be there
	keys  int                         // keys counted: the root's children
	stuck int                         // removals that met a saturated counter since the last build
}

// filterWords are a filter's counters, sixteen to a word: a power of two
// of words.
type filterWords []uint64

// rootFilterMin is the child count at which the root gets a filter: below
// it the root's children are few enough to stay in cache.
const rootFilterMin = 64

const counterMax = 15

// counters returns the word and the three counter positions (nibble
// shifts) of local hash l (ws must not be empty). They come from hash
// bits that neither the child table's groups (the top ones) nor its tags
// (the low seven) use.
func (ws filterWords) counters(l uint64) (word int, shifts [3]uint) {
	h := hashOf(l) >> 7
	return int(h>>12) & (len(ws) - 1), [3]uint{uint(h&15) * 4, uint(h>>4&15) * 4, uint(h>>8&15) * 4}
}

// mayHold reports whether some child of the root may start with l. It
// needs no lock.
func (f *rootFilter) mayHold(l uint64) bool {
	ws := f.words.Load()
	if ws == nil {
		return true
	}
	i, s := ws.counters(l)
	w := atomic.LoadUint64(&(*ws)[i])
	return w>>s[0]&counterMax != 0 && w>>s[1]&counterMax != 0 && w>>s[2]&counterMax != 0
}

// current returns the filter's words, nil when there is none (writers
// only).
func (f *rootFilter) current() filterWords {
	if ws := f.words.Load(); ws != nil {
		return *ws
	}
	return nil
}

// count adds l's counts to the filter (up) or takes them away, and
// returns how many of l's counters were saturated (and so left as they
// were). Only writers call it, one at a time; it stores the word
// atomically for the readers.
func (ws filterWords) count(l uint64, up bool) (saturated int) {
	i, s := ws.counters(l)
	w := atomic.LoadUint64(&ws[i])
	for _, sh := range s {
		switch c := w >> sh & counterMax; {
		case c == counterMax:
			saturated++
		case up:
			w += 1 << sh
		case c > 0:
			w -= 1 << sh
		}
	}
	atomic.StoreUint64(&ws[i], w)
	return saturated
}

// rootLinked notes a new child of the root under key l.
func (t *tree) rootLinked(l uint64) {
	f := &t.rootFilter
	ws := f.current()
	if ws == nil {
		if t.runs[rootRun].childMap != 0 && t.rootChildren() >= rootFilterMin {
			t.rebuildRootFilter()
		}
		return
	}
	f.keys++
	if f.keys > len(ws) {
		t.rebuildRootFilter() // two keys a word would let too many by
		return
	}
	ws.count(l, true)
}

// rootUnlinked notes that the root's child under key l left.
func (t *tree) rootUnlinked(l uint64) {
	f := &t.rootFilter
	ws := f.current()
	if ws == nil {
		return
	}
	f.keys--
	if ws.count(l, false) > 0 {
		f.stuck++
	}
	if 8*f.keys < len(ws) || 16*f.stuck > f.keys {
		t.rebuildRootFilter() // a filter too large for its keys, or too many stuck counters
	}
}

// rootChildren counts the root's children: its child table's entries
// (the root has one from childMapMin children on, below rootFilterMin).
func (t *tree) rootChildren() int {
	if m := t.runs[rootRun].childMap; m != 0 {
		return t.childMaps[m].len()
	}
	n := 0
	for c := t.runs[rootRun].firstChild; c != noRun; c = t.runs[c].next {
		n++
	}
	return n
}

// rebuildRootFilter builds the filter from the root's children, a word
// to every half child (to every child when it must grow again), in new
// words it then publishes; without enough children, the filter goes.
func (t *tree) rebuildRootFilter() {
	f := &t.rootFilter
	n := t.rootChildren()
	if n < rootFilterMin/2 {
		f.words.Store(nil)
		f.keys, f.stuck = 0, 0
		return
	}
	words := 1
	for words < 2*n {
		words *= 2
	}
	ws := make(filterWords, words)
	// The keys are read from the root's child table, whose groups hold
	// them side by side, not by walking the sibling list, a cache miss a
	// child (a rebuild over 16k children held the lock ~3 ms that way).
	if m := t.runs[rootRun].childMap; m != 0 {
		t.childMaps[m].each(func(k, _ uint64) { ws.count(k, true) })
	} else {
		for c := t.runs[rootRun].firstChild; c != noRun; c = t.runs[c].next {
			ws.count(t.runs[c].key, true)
		}
	}
	f.keys, f.stuck = n, 0
	f.words.Store(&ws)
}
