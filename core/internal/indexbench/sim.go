package indexbench

import (
	"fmt"
	"slices"
	"time"

	"github.com/kvhash/kvhash/core"
)

// lru is one simulated engine's prefix cache: block names in recency
// order, bounded.
type lru struct {
	index      map[uint64]int32 // name -> slot
	name       []uint64
	prev, next []int32 // recency list; head is the most recent
	head, tail int32
	free       []int32
	capacity   int
}

func newLRU(capacity int) *lru {
	return &lru{index: map[uint64]int32{}, head: -1, tail: -1, capacity: capacity}
}

func (c *lru) len() int { return len(c.index) }

func (c *lru) has(h uint64) bool { _, ok := c.index[h]; return ok }

func (c *lru) unlinkSlot(s int32) {
	if c.prev[s] >= 0 {
		c.next[c.prev[s]] = c.next[s]
	} else {
		c.head = c.next[s]
	}
	if c.next[s] >= 0 {
		c.prev[c.next[s]] = c.prev[s]
	} else {
		c.tail = c.prev[s]
	}
}

func (c *lru) pushFront(s int32) {
	c.prev[s], c.next[s] = -1, c.head
	if c.head >= 0 {
		c.prev[c.head] = s
	}
	c.head = s
	if c.tail < 0 {
		c.tail = s
	}
}

// touch makes h the most recent, inserting it if absent (the caller
// makes room first).
func (c *lru) touch(h uint64) {
	if s, ok := c.index[h]; ok {
		c.unlinkSlot(s)
		c.pushFront(s)
		return
	}
	var s int32
	if k := len(c.free); k > 0 {
		s = c.free[k-1]
		c.free = c.free[:k-1]
		c.name[s] = h
	} else {
		c.name = append(c.name, h)
		c.prev = append(c.prev, -1)
		c.next = append(c.next, -1)
		s = int32(len(c.name) - 1)
	}
	c.index[h] = s
	c.pushFront(s)
}

// evict removes the least recent name.
func (c *lru) evict() uint64 {
	s := c.tail
	c.unlinkSlot(s)
	h := c.name[s]
	delete(c.index, h)
	c.free = append(c.free, s)
	return h
}

// OpKind says what a recorded operation does.
type OpKind uint8

// The recorded operations: a routing query, and the two events engines send.
const (
	OpMatch OpKind = iota
	OpStored
	OpRemoved
)

// Op is one recorded operation. Stores and matches refer to a prompt's
// blocks [Start, End) so the stream stays small; removes carry names.
type Op struct {
	Kind       OpKind
	Worker     uint32
	Prompt     int32
	Start, End int32
	Removed    []uint64
}

// Recording is the operation stream of one simulated run.
type Recording struct {
	Workers  int
	Capacity int
	Ops      []Op
	// Totals, in blocks.
	Matched, Stored, Removed int
	// Hits is the sum of the routed workers' cached prefix lengths.
	Hits int
}

// Simulate routes every prompt to a worker and records the events the
// engines would send. Routing asks a live index for the overlap of every
// worker with the full prompt and picks the best; ties and requests with
// no overlap go to the worker caching the fewest blocks (then the lowest
// id). The chosen engine keeps every block of the prompt it lacks (up to
// its capacity) and evicts least recently used blocks to make room,
// reporting the evictions (one removed event) before the stores (one
// stored event per run of missing blocks, chained under the block before
// it). Blocks of a prompt are refreshed deepest first, so an engine
// evicts the tail of a prompt before its prefix, as vLLM does.
func Simulate(prompts []Prompt, workers, capacity int) (*Recording, error) {
	x := core.NewIndex(core.IndexOptions{Mode: core.ModeEnforce})
	caches := make([]*lru, workers)
	for i := range caches {
		caches[i] = newLRU(capacity)
	}
	rec := &Recording{Workers: workers, Capacity: capacity}
	var matches []core.Match
	var missing []int
	for p, pr := range prompts {
		n := len(pr.Local)
		if n == 0 {
			continue
		}
		rec.Ops = append(rec.Ops, Op{Kind: OpMatch, Prompt: int32(p), End: int32(n)})
		rec.Matched += n
		matches = x.AppendMatches(matches[:0], pr.Local, false)
		w := route(matches, caches)
		rec.Ops[len(rec.Ops)-1].Worker = uint32(w)
		c := caches[w]
		m := min(n, capacity)
		missing = missing[:0]
		prefix := true
		for i := range m {
			if c.has(pr.Seq[i]) {
				c.touch(pr.Seq[i])
				if prefix {
					rec.Hits++
				}
			} else {
				missing = append(missing, i)
				prefix = false
			}
		}
		if need := c.len() + len(missing) - capacity; need > 0 {
			op := Op{Kind: OpRemoved, Worker: uint32(w), Removed: make([]uint64, need)}
			for i := range op.Removed {
				op.Removed[i] = c.evict()
			}
			if err := apply(x, prompts, op); err != nil {
				return nil, err
			}
			rec.Ops = append(rec.Ops, op)
			rec.Removed += need
		}
		for i := 0; i < len(missing); {
			j := i + 1
			for j < len(missing) && missing[j] == missing[j-1]+1 {
				j++
			}
			op := Op{Kind: OpStored, Worker: uint32(w), Prompt: int32(p), Start: int32(missing[i]), End: int32(missing[j-1] + 1)}
			if err := apply(x, prompts, op); err != nil {
				return nil, err
			}
			rec.Ops = append(rec.Ops, op)
			rec.Stored += j - i
			i = j
		}
		for i := m - 1; i >= 0; i-- {
			c.touch(pr.Seq[i])
		}
	}
	// The engines and the index must agree block for block.
	for _, ws := range x.Stats().Workers {
		if got, want := ws.Blocks, uint64(caches[ws.Worker.ID].len()); got != want {
			return nil, fmt.Errorf("worker %d: index has %d blocks, engine %d", ws.Worker.ID, got, want)
		}
	}
	return rec, nil
}

func route(matches []core.Match, caches []*lru) int {
	best, bestScore := -1, uint32(0)
	for _, m := range matches {
		w := int(m.Worker.ID)
		if m.Score > bestScore || (m.Score == bestScore && caches[w].len() < caches[best].len()) {
			best, bestScore = w, m.Score
		}
	}
	if best >= 0 {
		return best
	}
	for w := range caches {
		if best < 0 || caches[w].len() < caches[best].len() {
			best = w
		}
	}
	return best
}

// blocksOf fills buf with the stored blocks of op.
func blocksOf(buf []core.StoredBlock, pr *Prompt, op *Op) []core.StoredBlock {
	buf = buf[:0]
	for i := op.Start; i < op.End; i++ {
		buf = append(buf, core.StoredBlock{BlockHash: pr.Seq[i], TokensHash: pr.Local[i]})
	}
	return buf
}

func apply(x *core.Index, prompts []Prompt, op Op) error {
	w := core.Worker{ID: uint64(op.Worker)}
	switch op.Kind {
	case OpRemoved:
		return x.ApplyRemoved(w, 0, op.Removed)
	case OpStored:
		pr := &prompts[op.Prompt]
		var parent *uint64
		if op.Start > 0 {
			parent = &pr.Seq[op.Start-1]
		}
		return x.ApplyStored(w, 0, parent, blocksOf(nil, pr, &op))
	}
	return nil
}

// ReplayResult is what one replay measured.
type ReplayResult struct {
	IndexTime   time.Duration // inside index calls only
	ApplyTime   time.Duration // inside ApplyStored / ApplyRemoved
	BlockOps    int           // stored + removed + matched blocks
	ApplyBlocks int           // stored + removed blocks
	MatchNanos  []int64       // each routing query's latency
}

// Replay applies a recording to x and times every index call (the
// stores' block lists are built outside the timed sections).
func Replay(x *core.Index, prompts []Prompt, rec *Recording) (ReplayResult, error) {
	var res ReplayResult
	var buf []core.StoredBlock
	matches := make([]core.Match, 0, rec.Workers)
	res.MatchNanos = make([]int64, 0, len(prompts))
	for i := range rec.Ops {
		op := &rec.Ops[i]
		w := core.Worker{ID: uint64(op.Worker)}
		switch op.Kind {
		case OpMatch:
			q := prompts[op.Prompt].Local[op.Start:op.End]
			t0 := time.Now()
			matches = x.AppendMatches(matches[:0], q, false)
			d := time.Since(t0)
			res.IndexTime += d
			res.MatchNanos = append(res.MatchNanos, d.Nanoseconds())
			res.BlockOps += len(q)
		case OpStored:
			pr := &prompts[op.Prompt]
			buf = blocksOf(buf, pr, op)
			var parent *uint64
			if op.Start > 0 {
				parent = &pr.Seq[op.Start-1]
			}
			t0 := time.Now()
			err := x.ApplyStored(w, uint64(i), parent, buf)
			d := time.Since(t0)
			if err != nil {
				return res, fmt.Errorf("op %d: %w", i, err)
			}
			res.IndexTime += d
			res.ApplyTime += d
			res.BlockOps += len(buf)
			res.ApplyBlocks += len(buf)
		case OpRemoved:
			t0 := time.Now()
			err := x.ApplyRemoved(w, uint64(i), op.Removed)
			d := time.Since(t0)
			if err != nil {
				return res, fmt.Errorf("op %d: %w", i, err)
			}
			res.IndexTime += d
			res.ApplyTime += d
			res.BlockOps += len(op.Removed)
			res.ApplyBlocks += len(op.Removed)
		}
	}
	return res, nil
}

// Percentile returns the p-th percentile (0..100) of samples, sorting
// them in place.
func Percentile(samples []int64, p float64) int64 {
	if len(samples) == 0 {
		return 0
	}
	slices.Sort(samples)
	k := int(p / 100 * float64(len(samples)-1))
	return samples[k]
}
