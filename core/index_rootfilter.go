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
// A rebuild reads the root's children: a cache miss each, milliseconds
// for the tens of thousands a root has when many prompts share no prefix,
// which every query would wait for behind the index's lock. So a large
// rebuild is done a few children at a time, by the changes of the root's
// children that follow (rebuildStep), the filter in use counting on
// meanwhile: no change holds the lock for more than a few microseconds of
// it, whatever the root's size.
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

	// A rebuild fills next from the root's children a few at a time
	// (rebuildStep), while words, published, goes on counting every
	// change; next is published once it counts every child. A root child
	// is counted in next when its runCounted flag equals counted (a
	// rebuild flips counted, so that no child is counted when it starts).
	next       filterWords // nil: no rebuild under way
	nextKeys   int         // children counted in next
	nextStuck  int         // removals that met a saturated counter of next
	cursor     uint32      // the next root child rebuildStep counts; noRun: none left
	counted    bool
	rebuilding bool
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

// rootFilterStep is how many root children a change of the root's
// children counts into a filter being rebuilt: a rebuild that starts with
// n children is done within n/rootFilterStep changes, before the filter
// in use has taken on more than a sixteenth more keys than it was built
// for, and each change reads a few microseconds' worth of children.
const rootFilterStep = 16

// rootFilterAtOnce is the most children a rebuild counts at once, when
// it starts: a small root's children cost a few microseconds.
const rootFilterAtOnce = 256

// rootLinked notes that run c became a child of the root.
func (t *tree) rootLinked(c uint32) {
	f := &t.rootFilter
	r := t.runs.at(c)
	l := r.key
	r.setCounted(f.counted)
	if f.rebuilding {
		if f.next != nil {
			f.next.count(l, true)
			f.nextKeys++
		}
		if ws := f.current(); ws != nil {
			ws.count(l, true)
			f.keys++
		}
		t.rebuildStep(rootFilterStep)
		return
	}
	ws := f.current()
	if ws == nil {
		if t.runs.at(rootRun).childMap != 0 && t.rootChildren() >= rootFilterMin {
			t.startRootFilterRebuild()
		}
		return
	}
	f.keys++
	ws.count(l, true)
	if f.keys > len(ws) {
		t.startRootFilterRebuild() // two keys a word would let too many by
	}
}

// rootUnlinked notes that run c, under key l, left the root (the caller
// moved the rebuild's cursor off it first: rootLeaving).
func (t *tree) rootUnlinked(c uint32, l uint64) {
	f := &t.rootFilter
	if f.rebuilding {
		if f.next != nil && t.runs.at(c).isCounted(f.counted) {
			f.nextKeys--
			if f.next.count(l, false) > 0 {
				f.nextStuck++
			}
		}
	}
	ws := f.current()
	if ws != nil {
		f.keys--
		if ws.count(l, false) > 0 {
			f.stuck++
		}
	}
	if f.rebuilding {
		t.rebuildStep(rootFilterStep)
		return
	}
	if ws != nil && (8*f.keys < len(ws) || 16*f.stuck > f.keys) {
		t.startRootFilterRebuild() // a filter too large for its keys, or too many stuck counters
	}
}

// rootLeaving moves a rebuild's cursor off root child c, which is about
// to leave the root's children.
func (t *tree) rootLeaving(c uint32) {
	if f := &t.rootFilter; f.rebuilding && f.cursor == c {
		f.cursor = t.runs.at(c).next
	}
}

// rootReplaced notes that run c took root child old's place in the
// root's children (a split), with its key and its runCounted flag.
func (t *tree) rootReplaced(old, c uint32) {
	if f := &t.rootFilter; f.rebuilding && f.cursor == old {
		f.cursor = c
	}
}

// rootChildren counts the root's children: its child table's entries
// (the root has one from childMapMin children on, below rootFilterMin).
func (t *tree) rootChildren() int {
	if m := t.runs.at(rootRun).childMap; m != 0 {
		return t.childMaps[m].len()
	}
	n := 0
	for c := t.runs.at(rootRun).firstChild; c != noRun; c = t.runs.at(c).next {
		n++
	}
	return n
}

// startRootFilterRebuild starts building the filter again from the
// root's children, a word to every half child, in new words that the
// rebuild publishes when it has counted them all; a small root's are
// counted at once. Without enough children, the filter goes.
func (t *tree) startRootFilterRebuild() {
	f := &t.rootFilter
	n := t.rootChildren()
	f.counted = !f.counted // no child is counted in next
	f.rebuilding, f.cursor = true, t.runs.at(rootRun).firstChild
	f.nextKeys, f.nextStuck = 0, 0
	f.next = nil
	if n >= rootFilterMin/2 {
		words := 1
		for words < 2*n {
			words *= 2
		}
		f.next = make(filterWords, words)
	}
	if n <= rootFilterAtOnce {
		t.rebuildStep(n)
	}
}

// rebuildStep counts up to k more root children into the filter being
// rebuilt, and publishes it once it counts them all.
func (t *tree) rebuildStep(k int) {
	f := &t.rootFilter
	c := f.cursor
	for ; c != noRun && k > 0; k-- {
		r := t.runs.at(c)
		if !r.isCounted(f.counted) {
			r.setCounted(f.counted)
			if f.next != nil {
				f.next.count(r.key, true)
				f.nextKeys++
			}
		}
		c = r.next
	}
	f.cursor = c
	if c != noRun {
		return
	}
	f.rebuilding = false
	if f.next == nil {
		f.words.Store(nil)
		f.keys, f.stuck = 0, 0
		return
	}
	ws := f.next
	f.next = nil
	f.keys, f.stuck = f.nextKeys, f.nextStuck
	f.words.Store(&ws)
}

// isCounted reports whether root child r is counted in a filter being
// rebuilt, whose flag value for that is counted.
func (r *run) isCounted(counted bool) bool { return (r.flags&runCounted != 0) == counted }

func (r *run) setCounted(counted bool) {
	if counted {
		r.flags |= runCounted
	} else {
		r.flags &^= runCounted
	}
}
