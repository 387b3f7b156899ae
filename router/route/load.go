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
// A request's blocks go into its rank's block map and the holders rows
// (one map operation or more a block) only as far as another request
// holds them too: the rest of its chain, its tail, is kept as its own
// list, known by its first hash (tails). A prompt of a conversation's
// next turn shares its prefix with a running request, but its own long
// end, and most of the blocks of a trace of long prompts, are nobody
// else's: they cost a route and its end nothing a block (the slowest
// routes of the Mooncake trace were this bookkeeping, a few thousand map
// operations of 100-400 ns each). A tail stays exact: a prompt that
// continues into one leaves every rank's maps where the tail starts
// (sequence hashes name their whole prefix), so depths looks its hash up
// there, and the shared part moves into the maps when the prompt is
// routed (promote).
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
	idle      int    // slots whose rank has no request
	gen       uint64 // bumped whenever a worker's slot changes
	holders   holders
	// tails: each request's tail (blocks[excl:], see above) by its first
	// hash. A tail's hashes are in no map and held by no other request.
	tails     map[uint64]*request
	tailsPeak peak // see shrink.go
	// noTails maps every block, as the table did before tails: the
	// baseline of BenchmarkRouteLongPrompt.
	noTails bool
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
	// excl: blocks[:excl] are in the rank's block map (and the holders
	// rows); blocks[excl:] is the request's tail, in tails when not empty.
	excl int
	at   time.Time
	// held: the request never expires (its caller frees it); it has no
	// order entry.
	held bool
	// lent: blocks went to the load observer, which may keep them (the
	// record is not reused).
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
	blocks        map[uint64]uint32 // sequence hash -> active requests holding it
	blocksPeak    peak
	tailBlocks    int // the blocks of its requests' tails (in no map)
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
	return loadTable{requests: map[string]*request{}, slotOf: map[core.Worker]int32{}, gen: 1, holders: newHolders(), tails: map[uint64]*request{},
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
// first depth active (holders.depths): decode blocks are its active
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
	return Load{PrefillTokens: rl.prefillTokens, DecodeBlocks: uint64(rl.activeBlocks() + seqLen - int(depth))}
}

// activeBlocks is how many distinct blocks the rank's requests hold.
func (rl *rankLoad) activeBlocks() int { return len(rl.blocks) + rl.tailBlocks }

// depths fills depth (by slot, grown as needed) with how many leading
// hashes of seq each slot's rank has active, and returns where seq leaves
// the maps and the tail it continues into there, for addInto.
func (t *loadTable) depths(seq []uint64, depth []uint32, alive []uint64) ([]uint32, []uint64, tailMatch) {
	depth = slices.Grow(depth[:0], len(t.ranks))[:len(t.ranks)]
	alive = slices.Grow(alive[:0], t.holders.stride)[:t.holders.stride]
	m := t.tailAt(seq, t.holders.depths(seq, depth, alive))
	if m.req != nil {
		// The tail's request holds seq up to where its tail starts (its
		// mapped blocks), then as far as the tail goes on alike.
		depth[m.req.slot] = max(depth[m.req.slot], uint32(m.at+m.n))
	}
	return depth, alive, m
}

// tailMatch says where a chain of sequence hashes leaves the maps (at:
// its first hash no rank holds there; -1: not known, the chain is mapped
// block by block) and, when it goes on into a request's tail there, whose
// (req) and for how many hashes (n).
type tailMatch struct {
	at  int
	req *request
	n   int
}

// tailAt is the tailMatch of seq leaving the maps at at.
func (t *loadTable) tailAt(seq []uint64, at int) tailMatch {
	m := tailMatch{at: at}
	if at < 0 || at >= len(seq) {
		return m
	}
	rq := t.tails[seq[at]]
	if rq == nil || rq.excl != at {
		return m
	}
	n := 0
	for n < len(seq)-at && at+n < len(rq.blocks) && seq[at+n] == rq.blocks[at+n] {
		n++
	}
	m.req, m.n = rq, n
	return m
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
		t.holders.fit(len(t.ranks))
	}
	m := t.models[w]
	if m == nil {
		m = &rankModel{} // a new rank starts as the fleet is
		t.models[w] = m
	}
	t.ranks[s] = &rankLoad{worker: w, blocks: map[uint64]uint32{}, model: m}
	t.slotOf[w] = s
	t.idle++ // no request yet: add takes it out
	t.gen++
	return s
}

// add records a request's load; held requests never expire.
func (t *loadTable) add(id string, w core.Worker, prefillTokens uint64, seq []uint64, now time.Time, held bool) {
	t.addInto(new(request), id, w, prefillTokens, seq, now, held, t.tailAt(seq, t.holders.firstUnheld(seq)))
}

// addInto is add with the request's record allocated by the caller (a
// decision allocates it before it takes the router's lock: an allocation
// may make its goroutine assist the garbage collector, and wait, and
// every other decision would wait with it). m is seq's tailMatch in the
// table as it is (depths, in the same hold of the lock).
func (t *loadTable) addInto(rq *request, id string, w core.Worker, prefillTokens uint64, seq []uint64, now time.Time, held bool, m tailMatch) {
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
	// seq[:mapped] goes into the maps; the rest is the request's tail.
	mapped := len(seq)
	if m.at >= 0 && m.at < len(seq) && !t.noTails {
		mapped = m.at
		if m.req != nil {
			mapped += m.n
			t.promote(m.req, mapped) // now shared: into the maps
		}
	}
	if mapped < len(seq) {
		if _, taken := t.tails[seq[mapped]]; taken {
			mapped = len(seq) // only a list that is not a chain gets here: map it all
		} else {
			t.tails[seq[mapped]] = rq
			t.tailsPeak.grew(len(t.tails))
			rl.tailBlocks += len(seq) - mapped
		}
	}
	rq.excl = mapped
	t.mapBlocks(rl, s, seq[:mapped])
}

// mapBlocks counts one more holder on rank rl (slot s) of each hash.
func (t *loadTable) mapBlocks(rl *rankLoad, s int32, hashes []uint64) {
	for _, h := range hashes {
		// One map operation a hash: the increment makes the entry when
		// there was none, which the length shows.
		n := len(rl.blocks)
		rl.blocks[h]++
		if len(rl.blocks) != n {
			t.holders.set(h, s)
		}
	}
	rl.blocksPeak.grew(len(rl.blocks))
}

// promote moves rq's tail up to blocks[to] into its rank's maps, another
// request having routed a prompt that shares it.
func (t *loadTable) promote(rq *request, to int) {
	if to <= rq.excl {
		return
	}
	rl := t.ranks[rq.slot]
	if t.tails[rq.blocks[rq.excl]] == rq {
		delete(t.tails, rq.blocks[rq.excl])
	}
	t.mapBlocks(rl, rq.slot, rq.blocks[rq.excl:to])
	rl.tailBlocks -= to - rq.excl
	rq.excl = to
	if to < len(rq.blocks) {
		t.tails[rq.blocks[to]] = rq
	}
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
	for _, h := range rq.blocks[:rq.excl] {
		if n := rl.blocks[h] - 1; n == 0 {
			delete(rl.blocks, h)
			t.holders.unset(h, rq.slot)
		} else {
			rl.blocks[h] = n
		}
	}
	if rq.excl < len(rq.blocks) {
		if t.tails[rq.blocks[rq.excl]] == rq {
			delete(t.tails, rq.blocks[rq.excl])
			if t.tailsPeak.shrunk(len(t.tails)) {
				t.tails = rebuilt(t.tails)
			}
		}
		rl.tailBlocks -= len(rq.blocks) - rq.excl
	}
	// Its order entry may outlive it (dead entries are dropped in bulk):
	// the entry must not keep its blocks. A held request has no entry:
	// its record and blocks can serve another decision.
	if rq.held && !rq.lent && t.spare != nil && cap(rq.blocks) <= spareBlocksMax {
		*rq = request{blocks: rq.blocks[:0]}
		t.spare.Put(rq)
	} else {
		rq.blocks = nil
	}
	if rl.blocksPeak.shrunk(len(rl.blocks)) {
		rl.blocks = rebuilt(rl.blocks)
	}
	t.holders.compact()
	if rl.requests == 0 {
		t.idle++
		if t.idle > idleSweepMin && t.idle > len(t.slotOf)-t.idle {
			t.sweep()
		}
	}
	return true
}

// sweep frees the idle slots (their ranks have no load, so no holders
// bit names them).
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
	for _, rl := range t.ranks {
		if rl == nil || rl.requests == 0 {
			continue
		}
		out = append(out, WorkerLoad{Worker: rl.worker, Requests: rl.requests, PrefillTokens: rl.prefillTokens, ActiveBlocks: uint64(rl.activeBlocks())})
	}
	slices.SortFunc(out, func(a, b WorkerLoad) int { return a.Worker.Compare(b.Worker) })
	return out
}
