package core

import "sync/atomic"

// rootFilter is a Bloom filter over the local hashes of the root's
// children: a query (or a store) whose first block no run starts with is
// told so from the filter, eight to sixteen bytes a child and so mostly
// in cache, instead of by a probe into the root's child table, a cache
// miss. On the replayed traces about half of all routing probes start with a
// block no worker holds: a prompt nobody has sent before. A key sets two
// bits of one word (one memory access a lookup); at 64 to 128 bits a key,
// about one absent key in a thousand passes. (With half the queries
// missing, the median query's latency is the slow end of the misses:
// each key that passes costs a probe of the table.)
//
// Bits are set as children are linked and never cleared; a removal only
// counts, and once removals reach a quarter of the keys set the filter is
// built again from the children, as it is when it fills up (64 bits a
// key): each rebuild is paid for by changes in proportion to what it
// reads.
//
// A match reads the filter without the index's lock (Index.AppendMatches:
// a query answered by the filter takes no lock at all). So its words are
// read and set atomically, and a rebuild fills new words and then
// publishes them: a reader sees the old filter or the new, each of which
// holds every key linked before it was published, never one cleared for
// its rebuild.
type rootFilter struct {
	bits  atomic.Pointer[filterWords] // nil: no filter, every key may be there
	keys  int                         // keys set since the last build
	stale int                         // children unlinked since then
}

// filterWords are a filter's bits: a power of two of words.
type filterWords []uint64

// rootFilterMin is the child count at which the root gets a filter: below
// it the root's children are few enough to stay in cache.
const rootFilterMin = 64

// bitsOf returns the word and two bits of local hash l (bits must not
// be empty). It uses hash bits that neither the child table's groups (the
// top ones) nor its tags (the low seven) use.
func (ws filterWords) bitsOf(l uint64) (word int, bits uint64) {
	h := hashOf(l) >> 7
	return int(h>>12) & (len(ws) - 1), 1<<(h&63) | 1<<(h>>6&63)
}

// mayHold reports whether some child of the root may start with l. It
// needs no lock.
func (f *rootFilter) mayHold(l uint64) bool {
	ws := f.bits.Load()
	if ws == nil {
		return true
	}
	w, b := ws.bitsOf(l)
	return atomic.LoadUint64(&(*ws)[w])&b == b
}

// words returns the filter's words, nil when there is none (writers only).
func (f *rootFilter) words() filterWords {
	if ws := f.bits.Load(); ws != nil {
		return *ws
	}
	return nil
}

// linked notes a new child of the root under key l.
func (t *tree) rootLinked(l uint64) {
	f := &t.rootFilter
	ws := f.words()
	if ws == nil {
		if t.runs[rootRun].childMap != 0 && t.rootChildren() >= rootFilterMin {
			t.rebuildRootFilter()
		}
		return
	}
	f.keys++
	if f.keys > len(ws) {
		t.rebuildRootFilter()
		return
	}
	w, b := ws.bitsOf(l)
	atomic.OrUint64(&ws[w], b)
}

// rootUnlinked notes that a child of the root left.
func (t *tree) rootUnlinked() {
	f := &t.rootFilter
	if f.words() == nil {
		return
	}
	if f.stale++; 4*f.stale > f.keys {
		t.rebuildRootFilter()
	}
}

func (t *tree) rootChildren() int {
	n := 0
	for c := t.runs[rootRun].firstChild; c != noRun; c = t.runs[c].next {
		n++
	}
	return n
}

// rebuildRootFilter builds the filter from the root's children, 128 bits
// a child (half that when it must grow again), in new words it then
// publishes; without enough children, the filter goes.
func (t *tree) rebuildRootFilter() {
	f := &t.rootFilter
	n := t.rootChildren()
	if n < rootFilterMin/2 {
		f.bits.Store(nil)
		f.keys, f.stale = 0, 0
		return
	}
	words := 1
	for words < 2*n {
		words *= 2
	}
	ws := make(filterWords, words)
	for c := t.runs[rootRun].firstChild; c != noRun; c = t.runs[c].next {
		w, b := ws.bitsOf(t.runs[c].key)
		ws[w] |= b
	}
	f.keys, f.stale = n, 0
	f.bits.Store(&ws)
}
