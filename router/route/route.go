package route

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/internal/freelist"
)

// DefaultRequestTTL: how long a routed request that is never freed counts
// as load.
const DefaultRequestTTL = 300 * time.Second

// Errors of Route and its helpers, wrapped with context.
var (
	ErrInvalidParams    = errors.New("invalid router parameters")
	ErrNoCandidates     = errors.New("no worker to route to")
	ErrDuplicateRequest = errors.New("request id already active")
)

// Options configure a Router.
type Options struct {
	// Params: the default cost knobs; nil: DefaultParams().
	Params *Params
	// RequestTTL: requests never freed stop counting after it; zero:
	// DefaultRequestTTL.
	RequestTTL time.Duration
	// Seed seeds the tie-break and sampling RNG; 0: a random seed.
	Seed uint64
	// Now is the clock (tests); nil: time.Now.
	Now func() time.Time
	// TTFTPrior: the predicted-TTFT cost's prior (a rank's coefficients
	// before it has history); nil: DefaultTTFTPrior().
	TTFTPrior *TTFTPrior
}

// Request is one routing question.
type Request struct {
	Model     string
	Tenant    string
	TokenIDs  []uint32
	LoraName  string
	CacheSalt string
	// RequestID names the request for PrefillDone and Free; "" makes the
	// router name it (the name is in the Decision).
	RequestID string
	Override  *Override
	// Eligible, when set, keeps only the workers it accepts as candidates
	// (the proxy's: those it has a base URL for; a gateway's subset hint);
	// nil: all.
	Eligible func(workerID uint64) bool
	// Held: the caller frees the request itself, however long it runs
	// (the proxy, for the requests it forwards): it never expires.
	Held bool
}

// Candidate is one worker rank's score for a request.
type Candidate struct {
	WorkerID      uint64        `json:"worker_id"`
	DPRank        uint32        `json:"dp_rank"`
	OverlapBlocks uint32        `json:"overlap_blocks"`
	Cost          float64       `json:"cost"`
	State         indexer.State `json:"state"`
	// PrefillBlocks (before prefill_load_scale) and DecodeBlocks are the
	// cost's two terms.
	PrefillBlocks float64 `json:"prefill_blocks"`
	DecodeBlocks  uint64  `json:"decode_blocks"`
	// TTFT: the predicted time to first token by term, when the cost is
	// CostTTFT (then Cost is the choice's score in microseconds: TotalS +
	// WorkWeight * OwnWorkS, rounded).
	TTFT TTFTTerms `json:"ttft,omitzero"`
}

// Decision is where a request goes, and why: every candidate, sorted by
// cost (then worker, rank).
type Decision struct {
	WorkerID      uint64  `json:"worker_id"`
	DPRank        uint32  `json:"dp_rank"`
	OverlapBlocks uint32  `json:"overlap_blocks"`
	Cost          float64 `json:"cost"`
	// CostModel: the cost the candidates were scored by (CostDynamo or
	// CostTTFT).
	CostModel  string      `json:"cost_model,omitempty"`
	RequestID  string      `json:"request_id"`
	Candidates []Candidate `json:"candidates"`
}

// scratch holds one Route call's reusable buffers.
type scratch struct {
	local    []uint64
	cands    []indexer.Candidate
	overlaps []indexer.Overlap
	sortKeys []costKey
	sortTmp  []Candidate
}

// scratchKept: Route calls at once whose buffers are kept for reuse.
const scratchKept = 64

// Router chooses workers with Dynamo's cost and tracks each worker
// rank's active load. It is safe for concurrent use.
type Router struct {
	ix     *indexer.Indexer
	params Params
	ttl    time.Duration
	now    func() time.Time
	nextID atomic.Uint64
	// scratch: Route's buffers, kept across garbage collections (see
	// router/internal/freelist).
	scratch *freelist.List[*scratch]

	mu       sync.Mutex
	rng      *rand.Rand
	load     loadTable
	expired  uint64
	scratchW []float64
	// Cost loop state, guarded by mu: each (model, tenant)'s candidate
	// slots, and the depth (by slot) of the active tree's walk.
	slotCaches map[indexer.ModelKey]*slotCache
	depth      []uint32
	remote     remoteState // replicas' load sync (remote.go)

	// pending: reports queued while mu was taken (nowait.go);
	// pendingSpare: the applied queue's memory, reused (mu held).
	pending      pendingOps
	pendingSpare []pendingOp
}

// New returns a Router over an Indexer.
func New(ix *indexer.Indexer, opts Options) (*Router, error) {
	p := DefaultParams()
	if opts.Params != nil {
		p = *opts.Params
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("route: %w", err)
	}
	if opts.RequestTTL <= 0 {
		opts.RequestTTL = DefaultRequestTTL
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	seed := opts.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	prior := DefaultTTFTPrior()
	if opts.TTFTPrior != nil {
		prior = *opts.TTFTPrior
	}
	if err := prior.Validate(); err != nil {
		return nil, fmt.Errorf("route: %w", err)
	}
	rt := &Router{
		ix: ix, params: p, ttl: opts.RequestTTL, now: opts.Now,
		rng:     rand.New(rand.NewPCG(seed, seed^0x9E3779B97F4A7C15)),
		scratch: freelist.New[*scratch](scratchKept),
		load:    newLoadTable(), slotCaches: map[indexer.ModelKey]*slotCache{},
	}
	rt.load.prior, rt.load.fleet = prior, newTTFTModel(prior)
	rt.load.spare = freelist.New[*request](spareRequests)
	return rt, nil
}

// Params returns the router's default cost knobs.
func (r *Router) Params() Params { return r.params }

// Route scores every candidate rank of the request's model and tenant,
// picks one, and records the request's load on it.
func (r *Router) Route(req Request) (Decision, error) {
	return r.RouteAppend(nil, req)
}

// RouteAppend is Route with the Decision's candidates in dst's memory
// (a caller that is done with them before its next route reuses it).
func (r *Router) RouteAppend(dst []Candidate, req Request) (Decision, error) {
	p, err := r.params.With(req.Override)
	if err != nil {
		return Decision{}, fmt.Errorf("route: %w", err)
	}
	key := indexer.ModelKey{Model: req.Model, Tenant: req.Tenant}
	sc, ok := r.scratch.Get()
	if !ok {
		sc = new(scratch)
	}
	defer r.scratch.Put(sc)
	local, err := r.ix.AppendPromptHashes(sc.local[:0], req.TokenIDs, indexer.PromptOptions{LoraName: req.LoraName, CacheSalt: req.CacheSalt})
	if err != nil {
		return Decision{}, fmt.Errorf("route: %w", err)
	}
	sc.local = local
	cands, err := r.ix.AppendCandidates(sc.cands[:0], key)
	if err != nil {
		return Decision{}, fmt.Errorf("route: %w", err)
	}
	if req.Eligible != nil {
		cands = keepEligible(cands, req.Eligible)
	}
	sc.cands = cands
	if len(cands) == 0 {
		return Decision{}, fmt.Errorf("route: %w: model %q tenant %q has no healthy worker", ErrNoCandidates, req.Model, req.Tenant)
	}
	// Every rank's overlap (all=true): the candidates carry their state,
	// so the merge below drops the non-live ranks' overlaps without the
	// indexer looking each one up again.
	overlaps, err := r.ix.AppendOverlaps(sc.overlaps[:0], key, local, true)
	if err != nil {
		return Decision{}, fmt.Errorf("route: %w", err)
	}
	sc.overlaps = overlaps
	// What the decision keeps is allocated before it takes the lock (see
	// loadTable.addInto), or reused: the request's record, its sequence
	// hashes (its load) and its name.
	rq, ok := r.load.spare.Get()
	if !ok {
		rq = new(request)
	}
	seq := core.AppendSequenceHashes(rq.blocks[:0], local)
	id := req.RequestID
	blockSize := r.ix.BlockSize()

	out := slices.Grow(dst[:0], len(cands))[:len(cands)]
	named := id != ""
	if !named {
		id = r.newID()
	}
	// The decision under the lock; sorting the candidates for the answer
	// is left until after it (the lock is every decision's).
	chosen, err := func() (Candidate, error) {
		r.lock()
		defer r.unlock()
		r.expireLocked(r.now())
		if r.load.has(id) {
			if named {
				r.load.spare.Put(rq)
				return Candidate{}, fmt.Errorf("route: %w: %q", ErrDuplicateRequest, id)
			}
			id = r.newIDLocked() // a client named a request "kvr-N" (rare)
		}
		cache := r.slotCaches[key]
		if cache == nil {
			cache = &slotCache{}
			r.slotCaches[key] = cache
		}
		slots := r.load.slotsFor(cache, cands)
		r.depth = r.load.depths(seq, r.depth)
		ttft := p.Cost == CostTTFT
		var now time.Time
		if ttft {
			now = r.now()
		}
		oi := 0
		for i, c := range cands {
			// Both lists are sorted by worker: merge.
			for oi < len(overlaps) && overlaps[oi].Worker.Compare(c.Worker) < 0 {
				oi++
			}
			var ov uint32
			if oi < len(overlaps) && overlaps[oi].Worker == c.Worker && c.State == indexer.StateLive {
				ov = overlaps[oi].Blocks
			}
			var depth uint32
			if s := slots[i]; s >= 0 {
				depth = r.depth[s]
			}
			if ttft {
				r.predictLocked(&out[i], c, slots[i], cache.models[i], ov, depth, len(req.TokenIDs), blockSize, now)
				continue
			}
			l := r.load.projected(slots[i], depth, len(seq))
			cost, prefill := Cost(p, blockSize, l, len(req.TokenIDs), ov)
			out[i] = Candidate{
				WorkerID: c.Worker.ID, DPRank: c.Worker.DPRank, OverlapBlocks: ov, Cost: cost,
				State: c.State, PrefillBlocks: prefill, DecodeBlocks: l.DecodeBlocks,
			}
		}
		var pick int
		if ttft && p.Temperature == 0 {
			pick = r.pickTTFTLocked(out, slots)
		} else {
			pick = r.pickLocked(out, p.Temperature)
		}
		chosen := out[pick]
		newTokens := max(0, len(req.TokenIDs)-int(chosen.OverlapBlocks)*blockSize)
		if ttft {
			newTokens = max(0, len(req.TokenIDs)-chosen.TTFT.CachedTokens)
		}
		r.load.addInto(rq, id, core.Worker{ID: chosen.WorkerID, DPRank: chosen.DPRank}, uint64(newTokens), seq, r.now(), req.Held)
		rq.lent = r.remote.observer.Load() != nil
		r.notifyLocked(LoadEvent{Op: LoadRouted, RequestID: id, Worker: core.Worker{ID: chosen.WorkerID, DPRank: chosen.DPRank},
			PrefillTokens: uint64(newTokens), Blocks: seq})
		return chosen, nil
	}()
	if err != nil {
		return Decision{}, err
	}
	sc.sortKeys, sc.sortTmp = sortCandidates(out, sc.sortKeys, sc.sortTmp)
	return Decision{
		WorkerID: chosen.WorkerID, DPRank: chosen.DPRank, OverlapBlocks: chosen.OverlapBlocks,
		Cost: chosen.Cost, RequestID: id, Candidates: out,
	}, nil
}

// newIDLocked names a request the client did not name: "kvr-N", skipping
// the names clients gave requests still active (a client may send any
// name, "kvr-3" too).
func (r *Router) newIDLocked() string {
	for {
		if id := r.newID(); !r.load.has(id) {
			return id
		}
	}
}

// newID is the next "kvr-N"; newIDLocked checks it is free.
func (r *Router) newID() string { return "kvr-" + strconv.FormatUint(r.nextID.Add(1), 10) }

// PrefillDone marks a request's prefill done: its tokens stop counting as
// prefill load (its blocks still count), and the time since it was routed
// is one observation of its rank's predicted-TTFT model (predict.go). It
// reports whether the request was active.
func (r *Router) PrefillDone(id string) bool {
	r.lock()
	defer r.unlock()
	return r.prefillDoneLocked(id, r.now())
}

func (r *Router) prefillDoneLocked(id string, now time.Time) bool {
	r.load.observe(id, now)
	ok := r.load.prefillDone(id)
	if ok {
		r.notifyLocked(LoadEvent{Op: LoadPrefillDone, RequestID: id})
	}
	return ok
}

// Free ends a request: its load is gone. It reports whether the request
// was active.
func (r *Router) Free(id string) bool {
	r.lock()
	defer r.unlock()
	return r.freeLocked(id)
}

func (r *Router) freeLocked(id string) bool {
	ok := r.load.free(id)
	if ok {
		r.notifyLocked(LoadEvent{Op: LoadFreed, RequestID: id})
	}
	return ok
}

// Expire ends the requests older than the TTL now and returns how many.
// Route also does it; a server calls it periodically so idle routers
// release load too.
func (r *Router) Expire() int {
	r.lock()
	defer r.unlock()
	return r.expireLocked(r.now())
}

func (r *Router) expireLocked(now time.Time) int {
	n := r.load.expire(now.Add(-r.ttl))
	r.expired += uint64(n)
	return n
}

// WorkerLoad is one rank's active load.
type WorkerLoad struct {
	Worker        core.Worker
	Requests      int
	PrefillTokens uint64
	ActiveBlocks  uint64
}

// LoadStats is the router's load bookkeeping, for metrics.
type LoadStats struct {
	ActiveRequests int
	Expired        uint64       // requests expired since start
	Workers        []WorkerLoad // sorted by worker; ranks with no load absent
}

// Stats returns the active load.
func (r *Router) Stats() LoadStats {
	r.lock()
	defer r.unlock()
	return LoadStats{ActiveRequests: r.load.active(), Expired: r.expired, Workers: r.load.workers()}
}
