package policy

import (
	"cmp"
	"slices"
	"time"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/route"
	"github.com/kvhash/kvhash/router/route/admit"
)

// The registered names of the router-backed policies.
const (
	KVRouter = "kvrouter"
	Dynamo   = "dynamo"
)

func init() {
	Register(KVRouter, func(env Env) (Policy, error) {
		p := route.DefaultParams()
		p.Cost = route.CostTTFT
		rp, err := newRouterPolicy(KVRouter, env, p)
		if err != nil {
			return nil, err
		}
		if !env.NoAdmission {
			rp.hold = admit.DefaultHoldTokens
			rp.slotBatch = admit.DefaultSlotBatch
		}
		return rp, nil
	})
	Register(Dynamo, func(env Env) (Policy, error) {
		p := env.Dynamo
		p.Cost = route.CostDynamo
		return newRouterPolicy(Dynamo, env, p)
	})
}

// routerPolicy is the production router (router/route) as a policy: the
// same Route, PrefillDone and Free the service calls, over the production
// index. kvrouter runs it with the predicted-TTFT cost (route.CostTTFT:
// each rank's queued prefill plus this prompt's uncached prefill plus
// decode interference, learned online from the prefill_done times);
// dynamo with Dynamo's cost and the knobs given (Env.Dynamo:
// overlap_score_credit, prefill_load_scale, router_temperature). Dynamo's credit decay (k), shared-tier credit (s)
// and per-request weight (alpha) default to 0, where the formula is the
// one router/route computes; they are not modelled.
type routerPolicy struct {
	name string
	rt   *route.Router
	env  Env
	// gauges: the scrape last passed to the router per worker (kvrouter
	// only: Dynamo's cost reads no gauges), so each scrape is passed once.
	gauges map[core.Worker]Metrics
	// hold: Admitter's threshold (kvrouter: admit.DefaultHoldTokens;
	// dynamo: 0, it routes every request when it arrives).
	hold uint64
	// slotBatch: Admitter's (kvrouter: admit.DefaultSlotBatch; dynamo:
	// 0).
	slotBatch int
}

func newRouterPolicy(name string, env Env, p route.Params) (*routerPolicy, error) {
	rt, err := route.New(env.Indexer, route.Options{Params: &p, Seed: env.Seed, Now: env.Now, RequestTTL: env.RequestTTL})
	if err != nil {
		return nil, err
	}
	rp := &routerPolicy{name: name, rt: rt, env: env}
	if p.Cost == route.CostTTFT {
		rp.gauges = map[core.Worker]Metrics{}
	}
	return rp, nil
}

func (p *routerPolicy) Name() string { return p.name }

// Router is the production router behind the policy (its load table is
// what the service's /v1/route keeps).
func (p *routerPolicy) Router() *route.Router { return p.rt }

func (p *routerPolicy) Pick(q *Query, rows []Row) (int, error) {
	if p.gauges != nil {
		p.observeGauges(rows)
	}
	// Only the rows are candidates: a caller leaves out the workers it
	// cannot send to now (the proxy: no free slot), and a choice outside
	// them would be an error for a request the fleet can serve.
	d, err := p.rt.Route(route.Request{Model: p.env.Model, TokenIDs: q.Tokens, RequestID: q.RequestID,
		Eligible: func(id uint64) bool { return hasWorker(rows, id) }})
	if err != nil {
		return 0, err
	}
	return rowOf(rows, workerOf(d))
}

func (p *routerPolicy) HoldTokens() uint64 { return p.hold }

func (p *routerPolicy) SlotBatch() int { return p.slotBatch }

func (p *routerPolicy) Saturated(rows []Row) (bool, error) {
	if p.hold == 0 {
		return false, nil
	}
	return p.rt.Saturated(indexer.ModelKey{Model: p.env.Model}, func(id uint64) bool { return hasWorker(rows, id) }, p.hold)
}

func (p *routerPolicy) ServiceS(q *Query) (float64, error) {
	e, err := p.rt.Estimate(route.Request{Model: p.env.Model, TokenIDs: q.Tokens})
	return e.ServiceS, err
}

func (p *routerPolicy) PrefillDone(id string) { p.rt.PrefillDone(id) }
func (p *routerPolicy) Free(id string)        { p.rt.Free(id) }

// hasWorker reports whether rows (sorted by worker) hold a rank of
// worker id.
func hasWorker(rows []Row, id uint64) bool {
	_, ok := slices.BinarySearchFunc(rows, id, func(r Row, id uint64) int { return cmp.Compare(r.Worker.ID, id) })
	return ok
}

func workerOf(d route.Decision) core.Worker { return core.Worker{ID: d.WorkerID, DPRank: d.DPRank} }

// observeGauges hands the router each worker's scrape when it changed.
// (A scrape that reads the same values twice is passed once: the router
// then dead-reckons from the first, slightly older, reading.)
func (p *routerPolicy) observeGauges(rows []Row) {
	for i := range rows {
		m := rows[i].Metrics
		if last, ok := p.gauges[rows[i].Worker]; ok && last == m {
			continue
		}
		p.gauges[rows[i].Worker] = m
		p.rt.ObserveGauges(rows[i].Worker, route.EngineGauges{Waiting: m.Waiting, Running: m.Running, KVUsage: m.KVUsage}, time.Time{})
	}
}
