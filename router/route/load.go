package route

import (
	"slices"
	"sort"
	"time"

	"github.com/kvhash/kvhash/core"
)

// loadTable tracks the requests routed and not yet freed, and per rank
// the load they add: prefill tokens until their prefill is done, and
// their blocks (sequence hashes, counted once per rank however many
// requests share them, as Dynamo's active sequences do).
type loadTable struct {
	requests map[string]*request
	ranks    map[core.Worker]*rankLoad
	// order: requests in routing order, for expiry. Entries of freed
	// requests (dead) are skipped when reached, and dropped in one pass
	// once they outnumber the live ones, so the queue stays O(active)
	// however high the request rate.
	order []orderEntry
	dead  int
}

type request struct {
	worker        core.Worker
	prefillTokens uint64 // 0 once prefill is done
	blocks        []uint64
	at            time.Time
}

type orderEntry struct {
	id  string
	req *request
}

type rankLoad struct {
	requests      int
	prefillTokens uint64
	blocks        map[uint64]uint32 // sequence hash -> active requests holding it
}

func newLoadTable() loadTable {
	return loadTable{requests: map[string]*request{}, ranks: map[core.Worker]*rankLoad{}}
}

func (t *loadTable) has(id string) bool { _, ok := t.requests[id]; return ok }

func (t *loadTable) active() int { return len(t.requests) }

// projected is the load of w as the cost sees it for a request with these
// sequence hashes: decode blocks are w's active blocks plus the
// request's blocks not among them.
//
// A rank's active blocks are prefix-closed: each request adds its whole
// chain of sequence hashes, and a sequence hash names its whole prefix.
// So the request's blocks that are active form a prefix of seq, and a
// binary search finds its length (Dynamo walks a tree of active prompts
// for the same depth).
func (t *loadTable) projected(w core.Worker, seq []uint64) Load {
	rl := t.ranks[w]
	if rl == nil {
		return Load{DecodeBlocks: uint64(len(seq))}
	}
	depth := sort.Search(len(seq), func(i int) bool {
		_, ok := rl.blocks[seq[i]]
		return !ok
	})
	return Load{PrefillTokens: rl.prefillTokens, DecodeBlocks: uint64(len(rl.blocks) + len(seq) - depth)}
}

func (t *loadTable) add(id string, w core.Worker, prefillTokens uint64, seq []uint64, now time.Time) {
	rq := &request{worker: w, prefillTokens: prefillTokens, blocks: seq, at: now}
	t.requests[id] = rq
	t.order = append(t.order, orderEntry{id: id, req: rq})
	rl := t.ranks[w]
	if rl == nil {
		rl = &rankLoad{blocks: map[uint64]uint32{}}
		t.ranks[w] = rl
	}
	rl.requests++
	rl.prefillTokens += prefillTokens
	for _, h := range seq {
		rl.blocks[h]++
	}
}

func (t *loadTable) prefillDone(id string) bool {
	rq, ok := t.requests[id]
	if !ok {
		return false
	}
	t.ranks[rq.worker].prefillTokens -= rq.prefillTokens
	rq.prefillTokens = 0
	return true
}

func (t *loadTable) free(id string) bool {
	if !t.release(id) {
		return false
	}
	if t.dead > 1024 && t.dead > len(t.requests) {
		t.order = slices.DeleteFunc(t.order, func(e orderEntry) bool { return t.requests[e.id] != e.req })
		t.dead = 0
	}
	return true
}

// release ends a request's load; its order entry becomes dead.
func (t *loadTable) release(id string) bool {
	rq, ok := t.requests[id]
	if !ok {
		return false
	}
	delete(t.requests, id)
	t.dead++
	rl := t.ranks[rq.worker]
	rl.requests--
	rl.prefillTokens -= rq.prefillTokens
	for _, h := range rq.blocks {
		if rl.blocks[h]--; rl.blocks[h] == 0 {
			delete(rl.blocks, h)
		}
	}
	if rl.requests == 0 {
		delete(t.ranks, rq.worker)
	}
	return true
}

// expire frees the requests routed before cutoff and returns how many.
func (t *loadTable) expire(cutoff time.Time) int {
	n, i := 0, 0
	for ; i < len(t.order); i++ {
		e := t.order[i]
		if !e.req.at.Before(cutoff) {
			break
		}
		if t.requests[e.id] == e.req { // still active (not freed, not reused)
			t.release(e.id)
			n++
		}
		t.dead-- // freed before, or just now
	}
	t.order = t.order[i:]
	// Release the consumed head's memory once it is most of the array.
	if cap(t.order) > 1024 && len(t.order) < cap(t.order)/4 {
		t.order = slices.Clone(t.order)
	}
	return n
}

func (t *loadTable) workers() []WorkerLoad {
	out := make([]WorkerLoad, 0, len(t.ranks))
	for w, rl := range t.ranks {
		out = append(out, WorkerLoad{Worker: w, Requests: rl.requests, PrefillTokens: rl.prefillTokens, ActiveBlocks: uint64(len(rl.blocks))})
	}
	slices.SortFunc(out, func(a, b WorkerLoad) int { return a.Worker.Compare(b.Worker) })
	return out
}
