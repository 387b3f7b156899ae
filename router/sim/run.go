package sim

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/internal/mooncake"
	"github.com/kvhash/kvhash/router/engine"
	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/ingest"
	"github.com/kvhash/kvhash/router/route/admit"
	"github.com/kvhash/kvhash/router/route/policy"
)

// model names the simulated fleet's one model.
const model = "sim"

// epoch is virtual time zero for the routers' clocks.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// tokenRunsCached: hash ids whose token runs a run keeps (4 MiB).
const tokenRunsCached = 2048

// maxZeroSteps: consecutive steps of no duration on one engine before a
// run is declared stuck (an engine that cannot make progress).
const maxZeroSteps = 10_000

// runSpec is one (policy, arrival stretch, seed).
type runSpec struct {
	policy    string
	load      float64 // the work past the pooled cache over the fleet's capacity (Config.Loads)
	rateScale float64 // arrival-rate multiplier over the trace's
	seed      uint64
}

// request is one trace request in flight.
type request struct {
	line      *mooncake.Request[float64] // its trace line: its tokens, made again when needed
	arrival   time.Duration
	firstAt   time.Duration
	hasFirst  bool
	generated int
}

// engineState is one engine of the fleet and what the router side knows
// of it.
type engineState struct {
	e       *engine.Engine
	worker  core.Worker
	busy    bool
	end     time.Duration     // when the pending step ends
	pending engine.StepResult // its events, delivered at end
	zero    int               // consecutive zero-duration steps
	seq     uint64            // its KV event stream's next seq
	scraped policy.Metrics    // its gauges as last scraped
	// The router's own in-flight accounting (Row.Requests, Row.Tokens).
	requests, tokens int
	prefillTokens    int // prompt tokens it computed (recomputes included)
	// slots, when the policy batches a full engine's admissions
	// (Admitter.SlotBatch): the requests the engine has, and those routed
	// to it that wait at the router for its slots.
	slots *admit.Slots[engine.Request]
}

// runner is one run's whole state.
type runner struct {
	cfg     *Config
	spec    runSpec
	trace   []int // request indexes in arrival order
	arrive  []time.Duration
	now     time.Duration
	ix      *indexer.Indexer
	pol     policy.Policy
	tracker policy.Tracker
	// admitter, when the policy holds requests while the fleet is
	// saturated: held is its queue of trace indexes.
	admitter policy.Admitter
	held     admit.Queue[int]
	reqs     []mooncake.Request[float64]
	overlap  bool
	engines  []*engineState
	steps    stepHeap
	live     map[string]*request
	out      outcomes
	rows     []policy.Row
	// record, when set (tests), hears every operation the router side
	// performs, in order.
	record func(op)
	runs   *tokenRuns
	// scratch
	toSend   []engine.Request // requests an engine's slots let go
	toks     []uint32         // the prompt being routed
	pubToks  []uint32         // the token ids of a batch's stores
	local    []uint64
	overlaps []indexer.Overlap
	batch    ingest.Batch
}

// outcomes is what a run measured, per finished request and per fleet.
type outcomes struct {
	ttft, tpot, e2e []float64 // seconds
	good            int
	held            int // requests the router held before routing
	failed          int
	promptTokens    int
	cachedTokens    int
}

func newRunner(cfg *Config, spec runSpec, order []int, arrive []time.Duration) (*runner, error) {
	bs := cfg.Engine.BlockSize
	r := &runner{cfg: cfg, spec: spec, trace: order, arrive: arrive, live: map[string]*request{}, runs: newTokenRuns(tokenRunsCached)}
	ix, err := indexer.New(indexer.Options{BlockSize: bs, Mode: core.ModeWarn, Now: r.clock})
	if err != nil {
		return nil, err
	}
	r.ix = ix
	for i := range cfg.Engines {
		e, err := engine.New(cfg.Engine)
		if err != nil {
			return nil, err
		}
		w := core.Worker{ID: uint64(i + 1)}
		if _, err := ix.AddWorker(indexer.WorkerSpec{WorkerID: w.ID, Model: model, EngineHash: "off"}); err != nil {
			return nil, err
		}
		r.engines = append(r.engines, &engineState{e: e, worker: w})
	}
	r.pol, err = policy.New(spec.policy, policy.Env{
		Seed: spec.seed, Indexer: ix, Model: model, EngineBlocks: cfg.Engine.NumBlocks,
		Dynamo: cfg.Dynamo, Now: r.clock, RequestTTL: 1000 * time.Hour, NoAdmission: cfg.NoAdmission,
	})
	if err != nil {
		return nil, err
	}
	r.tracker, _ = r.pol.(policy.Tracker)
	if a, ok := r.pol.(policy.Admitter); ok {
		if a.HoldTokens() > 0 {
			r.admitter = a
		}
		if b := a.SlotBatch(); b > 0 {
			for _, e := range r.engines {
				e.slots = admit.NewSlots[engine.Request](cfg.Engine.MaxNumSeqs, b)
			}
		}
	}
	if o, ok := r.pol.(policy.OverlapReader); ok {
		r.overlap = o.ReadsOverlap()
	}
	r.rows = make([]policy.Row, cfg.Engines)
	return r, nil
}

func (r *runner) clock() time.Time { return epoch.Add(r.now) }

const never = time.Duration(1<<63 - 1)

// run replays the whole trace: the next event is the earliest of an
// engine's step end, a scrape and an arrival (in that order at equal
// times: a step's events are known before what happens at its end).
func (r *runner) run(reqs []mooncake.Request[float64]) error {
	r.reqs = reqs
	next := 0
	scrape := time.Duration(0)
	for {
		tArr := never
		if next < len(r.trace) {
			tArr = r.arrive[r.trace[next]]
		}
		tStep := never
		if len(r.steps) > 0 {
			tStep = r.steps[0].at
		}
		if tArr == never && tStep == never {
			return r.checkNothingHeld()
		}
		switch {
		case tStep <= scrape && tStep <= tArr:
			s := heap.Pop(&r.steps).(stepEvent)
			r.now = s.at
			if err := r.stepEnded(s.engine); err != nil {
				return err
			}
		case scrape <= tArr:
			r.now = scrape
			for _, e := range r.engines {
				st := e.e.Stats()
				e.scraped = policy.Metrics{Waiting: st.Waiting, Running: st.Running, KVUsage: st.KVUsage}
				if e.slots != nil {
					// The requests the router holds for the engine's
					// slots wait for it as its own queue does.
					e.scraped.Waiting += e.slots.Held()
				}
			}
			scrape += r.cfg.ScrapeInterval
		default:
			r.now = tArr
			if err := r.arrived(&reqs[r.trace[next]], r.trace[next]); err != nil {
				return err
			}
			next++
		}
	}
}

// checkNothingHeld fails a run that ended with requests still held at
// the router (a release that never came would otherwise just shorten the
// results).
func (r *runner) checkNothingHeld() error {
	n := r.held.Len()
	for _, e := range r.engines {
		if e.slots != nil {
			n += e.slots.Held()
		}
	}
	if n > 0 {
		return fmt.Errorf("the run ended with %d requests held at the router", n)
	}
	return nil
}

// arrived routes a request and hands it to the chosen engine, or, when
// the policy holds requests and the fleet is saturated (or others are
// held already), queues it at the router.
func (r *runner) arrived(q *mooncake.Request[float64], idx int) error {
	if r.admitter != nil {
		hold := r.held.Len() > 0
		if !hold {
			r.fillRows()
			sat, err := r.admitter.Saturated(r.rows)
			if err != nil {
				return fmt.Errorf("request %d: %w", idx, err)
			}
			hold = sat
		}
		if hold {
			r.toks = r.runs.appendTokens(r.toks[:0], q)
			s, err := r.admitter.ServiceS(&policy.Query{RequestID: "r" + strconv.Itoa(idx), Tokens: r.toks})
			if err != nil {
				return fmt.Errorf("request %d: %w", idx, err)
			}
			r.held.Push(idx, r.clock(), s)
			r.out.held++
			return nil
		}
	}
	return r.dispatch(q, idx)
}

// release routes held requests, highest response ratio first, while the
// fleet has room.
func (r *runner) release() error {
	for r.held.Len() > 0 {
		r.fillRows()
		sat, err := r.admitter.Saturated(r.rows)
		if err != nil {
			return err
		}
		if sat {
			return nil
		}
		idx, _ := r.held.Pop(r.clock())
		if err := r.dispatch(&r.reqs[idx], idx); err != nil {
			return err
		}
	}
	return nil
}

// fillRows sets every engine's row but its overlap.
func (r *runner) fillRows() {
	for i, e := range r.engines {
		r.rows[i] = policy.Row{Worker: e.worker, Requests: e.requests, Tokens: e.tokens, Metrics: e.scraped}
	}
}

// dispatch routes request idx now and hands it to the chosen engine; its
// TTFT counts from its arrival.
func (r *runner) dispatch(q *mooncake.Request[float64], idx int) error {
	id := "r" + strconv.Itoa(idx)
	toks := r.runs.appendTokens(r.toks[:0], q)
	r.toks = toks
	var err error
	r.local, err = r.ix.AppendPromptHashes(r.local[:0], toks, indexer.PromptOptions{})
	if err != nil {
		return err
	}
	seq := core.SequenceHashes(r.local)
	r.fillRows()
	if r.overlap {
		r.overlaps, err = r.ix.AppendOverlaps(r.overlaps[:0], indexer.ModelKey{Model: model}, r.local, false)
		if err != nil {
			return err
		}
		for _, o := range r.overlaps {
			r.rows[o.Worker.ID-1].Overlap = o.Blocks
		}
	}
	pick, err := r.pol.Pick(&policy.Query{RequestID: id, Tokens: toks, Blocks: seq}, r.rows)
	if err != nil {
		return fmt.Errorf("request %d: %s: %w", idx, r.spec.policy, err)
	}
	if r.record != nil {
		r.record(op{kind: opRoute, id: id, tokens: toks, worker: r.engines[pick].worker})
	}
	out := max(1, q.OutputLength)
	e := r.engines[pick]
	er := engine.Request{ID: id, BlockHashes: seq, PromptTokens: q.InputLength, OutputTokens: out}
	held := false
	err = e.e.Check(er)
	if err == nil && e.slots != nil {
		if e.slots.Full() {
			er.BlockHashes = slices.Clone(seq) // seq is scratch
		}
		held = !e.slots.Send(er)
	}
	if err == nil && !held {
		err = e.e.Add(er)
	}
	if err != nil {
		if !errors.Is(err, engine.ErrTooLarge) && !errors.Is(err, engine.ErrBadRequest) {
			return fmt.Errorf("request %d: %w", idx, err)
		}
		r.out.failed++
		r.free(id)
		return nil
	}
	r.live[id] = &request{line: q, arrival: r.arrive[idx]}
	e.requests++
	e.tokens += q.InputLength
	if !held && !e.busy {
		return r.startStep(pick)
	}
	return nil
}

// startStep runs engine i's next step now; its events are delivered at
// its end.
func (r *runner) startStep(i int) error {
	e := r.engines[i]
	e.pending = e.e.Step()
	if e.pending.Duration <= 0 {
		e.zero++
		if e.zero > maxZeroSteps {
			return fmt.Errorf("engine %d makes no progress at %v", i, r.now)
		}
	} else {
		e.zero = 0
	}
	e.busy = true
	heap.Push(&r.steps, stepEvent{at: r.now + e.pending.Duration, engine: i})
	return nil
}

// stepEnded delivers engine i's step events at their time, then starts
// its next step unless it is idle.
func (r *runner) stepEnded(i int) error {
	e := r.engines[i]
	res := &e.pending
	e.busy = false
	e.prefillTokens += res.PrefillTokens
	if err := r.publish(e, res); err != nil {
		return err
	}
	for _, id := range res.FirstTokens {
		q := r.live[id]
		if q == nil || q.hasFirst {
			continue
		}
		q.firstAt, q.hasFirst = r.now, true
		if r.tracker != nil {
			r.tracker.PrefillDone(id)
		}
		if r.record != nil {
			r.record(op{kind: opPrefillDone, id: id})
		}
	}
	for _, id := range res.Generated {
		if q := r.live[id]; q != nil {
			q.generated++
			e.tokens++
		}
	}
	for _, f := range res.Finished {
		q := r.live[f.ID]
		if q == nil {
			continue
		}
		r.finish(q, f)
		delete(r.live, f.ID)
		e.requests--
		e.tokens -= q.line.InputLength + q.generated
		r.free(f.ID)
		if e.slots != nil {
			r.toSend = e.slots.Ended(r.toSend)
		}
	}
	for k, er := range r.toSend {
		if err := e.e.Add(er); err != nil { // checked when routed
			return fmt.Errorf("engine %d: %w", i, err)
		}
		r.toSend[k] = engine.Request{}
	}
	r.toSend = r.toSend[:0]
	if r.admitter != nil {
		if err := r.release(); err != nil {
			return err
		}
	}
	if !e.busy && !e.e.Idle() { // a release may have started its step
		return r.startStep(i)
	}
	return nil
}

// publish hands the step's KV events to the production indexer as one
// batch of the engine's stream: evictions first (a step allocates, and so
// evicts, before it computes and stores), then stores with their tokens.
func (r *runner) publish(e *engineState, res *engine.StepResult) error {
	if len(res.Removed) == 0 && len(res.Stored) == 0 {
		return nil
	}
	bs := r.cfg.Engine.BlockSize
	evs := r.batch.Events[:0]
	if len(res.Removed) > 0 {
		evs = append(evs, ingest.Event{Kind: ingest.BlockRemoved, BlockHashes: res.Removed})
	}
	// Every store's tokens into one buffer first, sliced once it is whole
	// (appending could move it).
	toks := r.pubToks[:0]
	for k := range res.Stored {
		s := &res.Stored[k]
		q := r.live[s.RequestID]
		if q == nil {
			return fmt.Errorf("engine %d stored blocks of unknown request %q", e.worker.ID, s.RequestID)
		}
		toks = r.runs.appendRange(toks, q.line, s.FirstBlock*bs, (s.FirstBlock+len(s.Hashes))*bs)
	}
	r.pubToks = toks
	at := 0
	for k := range res.Stored {
		s := &res.Stored[k]
		n := len(s.Hashes) * bs
		ev := ingest.Event{Kind: ingest.BlockStored, BlockHashes: s.Hashes, BlockSize: bs, TokenIDs: toks[at : at+n : at+n]}
		at += n
		if s.HasParent {
			p := s.Parent
			ev.ParentHash = &p
		}
		evs = append(evs, ev)
	}
	r.batch = ingest.Batch{Seq: e.seq, Events: evs}
	e.seq++
	if r.record != nil {
		r.record(op{kind: opEvents, worker: e.worker, batch: &r.batch})
	}
	r.ix.HandleBatch(ingest.Source{Model: model, WorkerID: e.worker.ID}, &r.batch)
	return nil
}

// free ends a request's load in the policy's router.
func (r *runner) free(id string) {
	if r.tracker != nil {
		r.tracker.Free(id)
	}
	if r.record != nil {
		r.record(op{kind: opFree, id: id})
	}
}

// op is one operation of the router side, for tests that replay a run
// through the service.
type op struct {
	kind   opKind
	id     string
	tokens []uint32 // valid during the call only
	worker core.Worker
	batch  *ingest.Batch // valid during the call only
}

type opKind uint8

const (
	opEvents opKind = iota + 1
	opRoute
	opPrefillDone
	opFree
)

// finish records a finished request's latencies.
func (r *runner) finish(q *request, f engine.Finished) {
	ttft := (q.firstAt - q.arrival).Seconds()
	e2e := (r.now - q.arrival).Seconds()
	tpot := 0.0
	if f.OutputTokens > 1 {
		tpot = (r.now - q.firstAt).Seconds() / float64(f.OutputTokens-1)
		r.out.tpot = append(r.out.tpot, tpot)
	}
	r.out.ttft = append(r.out.ttft, ttft)
	r.out.e2e = append(r.out.e2e, e2e)
	r.out.promptTokens += f.PromptTokens
	r.out.cachedTokens += f.CachedTokens
	if ttft <= r.cfg.SLO.TTFT.Seconds() && tpot <= r.cfg.SLO.TPOT.Seconds() {
		r.out.good++
	}
}

// stepEvent is an engine's pending step end; the heap orders them by
// time, then engine (deterministic).
type stepEvent struct {
	at     time.Duration
	engine int
}

type stepHeap []stepEvent

func (h stepHeap) Len() int { return len(h) }
func (h stepHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].engine < h[j].engine
}
func (h stepHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *stepHeap) Push(x any)   { *h = append(*h, x.(stepEvent)) }
func (h *stepHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// arrivalOrder returns the requests' indexes by timestamp (stable).
func arrivalOrder(reqs []mooncake.Request[float64]) []int {
	order := make([]int, len(reqs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(reqs[a].Timestamp, reqs[b].Timestamp) })
	return order
}
