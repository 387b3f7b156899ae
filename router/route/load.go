package route

import (
	"math"
	"slices"
	"time"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/internal/freelist"
)

// loadTable tracks the requests routed and not yet freed, and per rank
// the load they add: prefill tokens until their prefill is done, and
// their blocks (sequence hashes, counted once per rank however many
// requests share them, as Dynamo's active sequences do).
//
// The requests' blocks are in one radix tree for all ranks (active.go):
// a route asks it how much of its prompt each rank has active, and
// records its request along it, at the cost of comparing the prompt's
// hashes with a few runs, not a map operation a block.
//
// Ranks live in slots (dense, so a route's cost loop indexes arrays, not
// maps). A rank whose requests all ended keeps its slot, idle, so a busy
// fleet's slots stay put and routes can cache them (gen says when a
// cached slot list is stale); idle slots are swept once they outnumber
// the busy ones, so removed workers do not accumulate.
type loadTable struct {
	requests  map[string]*request
	slotOf    map[core.Worker]int32
	ranks     []*rankLoad // by slot; nil: free
	freeSlots []int32
	idle      int        // slots whose rank has no request
	gen       uint64     // bumped whenever a worker's slot changes
	chains    activeTree // the active requests' blocks (active.go)
	// order: requests in routing order, for expiry. Entries of freed
	// requests (dead) are skipped when reached, and dropped in one pass
	// once they outnumber the live ones, so the queue stays O(active)
	// however high the request rate.
	order []orderEntry
	dead  int
	// requestsPeak: see shrink.go.
	requestsPeak peak
	// models: each rank's learned speed against the fleet's model
	// (predict.go), kept by worker so a swept slot's rank keeps what it
	// learned.
	models map[core.Worker]*rankModel
	prior  TTFTPrior
	fleet  *ttftModel // the predicted-TTFT coefficients, from every rank's observations
	// rateEpoch: the time the ranks' scaled rates are relative to.
	rateEpoch time.Time
	// spare: ended held requests' records and block lists, for the next
	// decisions (see addInto); nil keeps none.
	spare *freelist.List[*request]
}

// Spare records are kept up to spareRequests, and only with block lists
// up to spareBlocksMax long (a few long prompts must not pin memory).
const (
	spareRequests  = 256
	spareBlocksMax = 4096
)

type request struct {
	slot          int32
	prefillTokens uint64 // 0 once prefill is done
	blocks        []uint64
	// made is the active tree's node of blocks' end, made by this
	// request (nil: none), and its gen then: blocks is part of the tree
	// while made.gen is madeGen.
	made    *node
	madeGen uint32
	at      time.Time
	// held: the request never expires (its caller frees it); it has no
	// order entry.
	held bool
	// lent: blocks went to the load observer, which may keep them (they
	// are not reused).
	lent bool
	// The predicted-TTFT observation: the work ahead of the request plus
	// its own (uncached tokens) and the rank's decode state when it was
	// routed; prefilling until its first token.
	work       uint64
	decode     float64 // the decode factor (predict.go)
	waiting    float64 // the engine's waiting requests ahead (gauges.go)
	prefilling bool
}

type orderEntry struct {
	id  string
	req *request
}

type rankLoad struct {
	worker        core.Worker
	requests      int
	prefillTokens uint64
	prefilling    int // requests before their first token
	model         *rankModel
	// rate: requests routed here, decayed with a 1 s time constant: the
	// flood guard's measure, kept scaled to the table's rateEpoch (see
	// rateScale) so a route decays every rank's rate with one exp.
	rate float64
	// gauges: the engine's /metrics as last scraped (gauges.go).
	gauges rankGauges
}

// idleSweepMin: idle slots kept before a sweep is considered.
const idleSweepMin = 256

func newLoadTable() loadTable {
	return loadTable{requests: map[string]*request{}, slotOf: map[core.Worker]int32{}, gen: 1,
		models: map[core.Worker]*rankModel{}, prior: DefaultTTFTPrior(), fleet: newTTFTModel(DefaultTTFTPrior())}
}

func (t *loadTable) has(id string) bool { _, ok := t.requests[id]; return ok }

func (t *loadTable) active() int { return len(t.requests) }

// slotCache is one (model, tenant)'s candidates' slots, valid while gen
// matches the table's and the candidates are the same.
type slotCache struct {
	gen     uint64
	workers []core.Worker
	slots   []int32 // -1: the rank has no slot (no load)
	// models: each candidate's predicted-TTFT model (nil: never routed
	// to); models are only made with a slot, which bumps gen.
	models []*rankModel
}

// slotsFor returns the slot of each candidate, from c when still valid.
func (t *loadTable) slotsFor(c *slotCache, cands []indexer.Candidate) []int32 {
	if c.gen == t.gen && len(c.workers) == len(cands) {
		same := true
		for i := range cands {
			if cands[i].Worker != c.workers[i] {
				same = false
				break
			}
		}
		if same {
			return c.slots
		}
	}
	c.gen = t.gen
	c.workers, c.slots, c.models = c.workers[:0], c.slots[:0], c.models[:0]
	for _, cd := range cands {
		s, ok := t.slotOf[cd.Worker]
		if !ok {
			s = -1
		}
		c.workers = append(c.workers, cd.Worker)
		c.slots = append(c.slots, s)
		c.models = append(c.models, t.models[cd.Worker])
	}
	return c.slots
}

// projected is the load of the rank in slot (-1: none) as the cost sees
// it for a request of seqLen sequence hashes, of which the rank has the
// first depth active (depths): decode blocks are its active
// blocks plus the request's blocks not among them.
//
// A rank's active blocks are prefix-closed: each request adds its whole
// chain of sequence hashes, and a sequence hash names its whole prefix.
// So the request's blocks that are active are its leading ones (Dynamo
// walks a tree of active prompts for the same depth).
func (t *loadTable) projected(slot int32, depth uint32, seqLen int) Load {
	if slot < 0 {
		return Load{DecodeBlocks: uint64(seqLen)}
	}
	rl := t.ranks[slot]
	return Load{PrefillTokens: rl.prefillTokens, DecodeBlocks: uint64(t.chains.heldBlocks(slot) + seqLen - int(depth))}
}

// depths fills depth (by slot, grown as needed) with how many leading
// hashes of seq each slot's rank has active.
func (t *loadTable) depths(seq []uint64, depth []uint32) []uint32 {
	depth = slices.Grow(depth[:0], len(t.ranks))[:len(t.ranks)]
	t.chains.depths(seq, depth)
	return depth
}

// slot returns w's slot, giving it one if it has none.
func (t *loadTable) slot(w core.Worker) int32 {
	if s, ok := t.slotOf[w]; ok {
		return s
	}
	var s int32
	if n := len(t.freeSlots); n > 0 {
		s, t.freeSlots = t.freeSlots[n-1], t.freeSlots[:n-1]
	} else {
		s = int32(len(t.ranks))
		t.ranks = append(t.ranks, nil)
	}
	m := t.models[w]
	if m == nil {
		m = &rankModel{} // a new rank starts as the fleet is
		t.models[w] = m
	}
	t.ranks[s] = &rankLoad{worker: w, model: m}
	t.slotOf[w] = s
	t.idle++ // no request yet: add takes it out
	t.gen++
	return s
}

// add records a request's load; held requests never expire.
func (t *loadTable) add(id string, w core.Worker, prefillTokens uint64, seq []uint64, now time.Time, held bool) {
	t.addInto(new(request), id, w, prefillTokens, seq, now, held)
}

// addInto is add with the request's record allocated by the caller (a
// decision allocates it before it takes the router's lock: an allocation
// may make its goroutine assist the garbage collector, and wait, and
// every other decision would wait with it).
func (t *loadTable) addInto(rq *request, id string, w core.Worker, prefillTokens uint64, seq []uint64, now time.Time, held bool) {
	s := t.slot(w)
	rl0 := t.ranks[s]
	*rq = request{slot: s, prefillTokens: prefillTokens, blocks: seq, at: now, held: held,
		work: rl0.prefillTokens + prefillTokens, decode: decodeFactor(rl0.requests, rl0.prefilling),
		waiting: rl0.gauges.waitingNow(rl0.requests, now), prefilling: true}
	rl0.prefilling++
	rl0.rate += 1 / t.rateScale(now)
	t.requests[id] = rq
	t.requestsPeak.grew(len(t.requests))
	if !held {
		t.order = append(t.order, orderEntry{id: id, req: rq})
	}
	rl := t.ranks[s]
	if rl.requests == 0 {
		t.idle--
	}
	rl.requests++
	rl.prefillTokens += prefillTokens
	rq.made, rq.madeGen = t.chains.insert(seq, s)
}

func (t *loadTable) prefillDone(id string) bool {
	rq, ok := t.requests[id]
	if !ok {
		return false
	}
	t.ranks[rq.slot].prefillTokens -= rq.prefillTokens
	rq.prefillTokens = 0
	if rq.prefilling {
		rq.prefilling = false
		t.ranks[rq.slot].prefilling--
	}
	return true
}

// observe feeds a request's routing-to-first-token time to its rank's
// model; false when the request is unknown or already past prefill.
func (t *loadTable) observe(id string, now time.Time) bool {
	rq, ok := t.requests[id]
	if !ok || !rq.prefilling {
		return false
	}
	sec := now.Sub(rq.at).Seconds()
	// The rank's speed against the fleet's model as it stood when the
	// first token came, then the fleet's model.
	t.ranks[rq.slot].model.observe(sec, t.fleet.totalS(rq.work, rq.decode, rq.waiting))
	t.fleet.observe(t.prior, t.prior.theta(), rq.work, rq.decode, rq.waiting, sec)
	return true
}

// rateScale returns the factor that turns a rank's scaled rate into its
// decayed arrival rate (requests per second) now: exp(-(now - epoch) /
// window). Past rateRebaseS from the epoch, every rate is rebased to now,
// so the factor stays in [exp(-rateRebaseS), 1] and never underflows.
func (t *loadTable) rateScale(now time.Time) float64 {
	if t.rateEpoch.IsZero() {
		t.rateEpoch = now
	}
	dt := now.Sub(t.rateEpoch).Seconds()
	if dt <= 0 {
		return 1
	}
	f := math.Exp(-dt / rateWindowS)
	if dt > rateRebaseS {
		for _, rl := range t.ranks {
			if rl != nil {
				rl.rate *= f
			}
		}
		t.rateEpoch, f = now, 1
	}
	return f
}

// rateRebaseS: how far the rate epoch may fall behind (exp(-64) is far
// above the smallest float64).
const rateRebaseS = 64.0

// rateWindowS: the flood guard's time constant.
const rateWindowS = 1.0

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
	if t.requestsPeak.shrunk(len(t.requests)) {
		t.requests = rebuilt(t.requests)
	}
	if !rq.held {
		t.dead++
	}
	rl := t.ranks[rq.slot]
	rl.requests--
	rl.prefillTokens -= rq.prefillTokens
	if rq.prefilling {
		rl.prefilling--
	}
	t.chains.remove(rq.blocks, rq.slot)
	// Its order entry may outlive it (dead entries are dropped in bulk):
	// the entry must not keep its blocks. A held request has no entry:
	// its record and blocks can serve another decision, the blocks once
	// no run of the active tree is a part of them (other requests may
	// still pass through the node it made).
	if rq.held && t.spare != nil {
		if !rq.lent && (rq.made == nil || rq.made.gen != rq.madeGen) && cap(rq.blocks) <= spareBlocksMax {
			*rq = request{blocks: rq.blocks[:0]}
		} else {
			*rq = request{}
		}
		t.spare.Put(rq)
	} else {
		rq.blocks, rq.made = nil, nil
	}
	if rl.requests == 0 {
		t.idle++
		if t.idle > idleSweepMin && t.idle > len(t.slotOf)-t.idle {
			t.sweep()
		}
	}
	return true
}

// sweep frees the idle slots (their ranks have no load, so no node of
// the active tree names them).
func (t *loadTable) sweep() {
	for s, rl := range t.ranks {
		if rl != nil && rl.requests == 0 {
			delete(t.slotOf, rl.worker)
			t.ranks[s] = nil
			t.freeSlots = append(t.freeSlots, int32(s))
		}
	}
	t.idle = 0
	t.gen++
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
	out := make([]WorkerLoad, 0, len(t.slotOf)-t.idle)
	for s, rl := range t.ranks {
		if rl == nil || rl.requests == 0 {
			continue
		}
		out = append(out, WorkerLoad{Worker: rl.worker, Requests: rl.requests, PrefillTokens: rl.prefillTokens, ActiveBlocks: uint64(t.chains.heldBlocks(int32(s)))})
	}
	slices.SortFunc(out, func(a, b WorkerLoad) int { return a.Worker.Compare(b.Worker) })
	return out
}
