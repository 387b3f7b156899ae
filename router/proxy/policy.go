package proxy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/route"
	"github.com/kvhash/kvhash/router/route/policy"
)

// Policy names how a request's worker is chosen.
type Policy string

// The policies. PolicyKV is kvrouter's; the others are the baselines a
// KV-aware router is measured against: the blind ones here, and the
// peers' (router/route/policy: dynamo, llmd, llmd-precise, sglang).
const (
	PolicyKV          Policy = "kvrouter"
	PolicyRoundRobin  Policy = "round_robin"
	PolicyRandom      Policy = "random"
	PolicyLeastLoaded Policy = "least_loaded"
)

// Policies lists the proxy's own policies, kvrouter's first; every other
// name router/route/policy registers is accepted too (ParsePolicy).
var Policies = []Policy{PolicyKV, PolicyRoundRobin, PolicyRandom, PolicyLeastLoaded}

// PolicyHeader is the request header that picks a policy.
const PolicyHeader = "X-Kvrouter-Policy"

// ParsePolicy reads a policy name ("kv" is accepted for kvrouter).
func ParsePolicy(s string) (Policy, error) {
	switch Policy(s) {
	case PolicyKV, "kv":
		return PolicyKV, nil
	case PolicyRoundRobin, PolicyRandom, PolicyLeastLoaded:
		return Policy(s), nil
	}
	if policy.Known(s) {
		return Policy(s), nil
	}
	return "", fmt.Errorf("policy %q: want one of %s", s, strings.Join(policy.Names(), ", "))
}

// target is where one request goes.
type target struct {
	WorkerID uint64
	BaseURL  string
	Model    string
	// RequestID names the request in the router's load table (kvrouter's
	// policy only; "" otherwise).
	RequestID string
	Overlap   uint32
	// tracker: a peer policy's own load accounting (dynamo's router).
	tracker      policy.Tracker
	peer         bool
	promptTokens int
}

// pick chooses the worker for a request under a policy and records its
// load. The caller must call release(t) when the request ends.
func (p *Proxy) pick(pol Policy, req clientRequest, tokens []uint32) (target, error) {
	key := indexer.ModelKey{Model: req.Model}
	switch pol {
	case PolicyKV:
		return p.pickKV(req, tokens)
	case PolicyRoundRobin, PolicyRandom, PolicyLeastLoaded:
	default:
		t, err := p.pickPeer(pol, req, tokens)
		t.peer = true
		return t, err
	}
	sc, ok := p.baselineBufs.Get()
	if !ok {
		sc = new(baselineScratch)
	}
	defer p.baselineBufs.Put(sc)
	cands, err := p.ix.AppendCandidates(sc.cands[:0], key)
	if err != nil {
		return target{}, routeError(err)
	}
	sc.cands = cands
	// Ranks of one worker share its base URL: the baselines choose among
	// workers, as a plain load balancer does.
	ids := sc.ids[:0]
	defer func() { sc.ids = ids }()
	for _, c := range cands {
		if len(ids) > 0 && ids[len(ids)-1] == c.Worker.ID {
			continue
		}
		if p.baseURL(c.Worker.ID) != "" {
			ids = append(ids, c.Worker.ID)
		}
	}
	if len(ids) == 0 {
		return target{}, unavailable("no_worker", "model %q has no healthy worker with a base_url", req.Model)
	}
	// Only the workers with a free slot (backpressure, admission.go).
	ids = slices.DeleteFunc(ids, func(id uint64) bool { return !p.slots.free(id) })
	if len(ids) == 0 {
		return target{}, errSaturated
	}
	p.mu.Lock() // the rng
	defer p.mu.Unlock()
	var id uint64
	switch pol {
	case PolicyRoundRobin:
		id = ids[int((p.rrNext.Add(1)-1)%uint64(len(ids)))]
	case PolicyRandom:
		id = ids[p.rng.IntN(len(ids))]
	case PolicyLeastLoaded:
		best, ties := -1, 0
		for _, c := range ids {
			n := p.slots.inUse(c)
			switch {
			case best < 0 || n < best:
				best, ties, id = n, 1, c
			case n == best:
				// Reservoir sampling: ties broken uniformly.
				ties++
				if p.rng.IntN(ties) == 0 {
					id = c
				}
			}
		}
	default:
		return target{}, badRequest("invalid_policy", "unknown policy %q", pol)
	}
	if !p.slots.take(id) {
		return target{}, errSaturated // another request took its last slot meanwhile
	}
	return target{WorkerID: id, BaseURL: p.baseURL(id), Model: req.Model}, nil
}

func (p *Proxy) pickKV(req clientRequest, tokens []uint32) (target, error) {
	// The router names the request: a name the proxy made up could be one
	// a client of /v1/route already uses. Only the workers the proxy can
	// forward to now are candidates (p.reachable).
	buf, _ := p.candidateBufs.Get()
	d, err := p.rt.RouteAppend(buf, route.Request{Model: req.Model, TokenIDs: tokens, CacheSalt: req.CacheSalt, Eligible: p.reachable,
		// The proxy frees what it forwards when the answer ends: a stream
		// longer than the request TTL still counts as load.
		Held: true})
	if d.Candidates != nil {
		buf = d.Candidates // grown
	}
	if cap(buf) > 0 {
		p.candidateBufs.Put(buf[:0]) // only the choice is used
	}
	if errors.Is(err, route.ErrNoCandidates) && p.anyReachable(req.Model) {
		return target{}, errSaturated
	}
	if err != nil {
		return target{}, routeError(err)
	}
	id := d.RequestID
	u := p.baseURL(d.WorkerID)
	if u == "" {
		p.rt.FreeNoWait(id)
		return target{}, unavailable("no_base_url", "worker %d was chosen but was registered without a base_url: register engines with base_url to proxy to them", d.WorkerID)
	}
	if !p.slots.take(d.WorkerID) {
		// Another request took its last slot since the route looked.
		p.rt.FreeNoWait(id)
		return target{}, errSaturated
	}
	return target{WorkerID: d.WorkerID, BaseURL: u, Model: req.Model, RequestID: id, Overlap: d.OverlapBlocks}, nil
}

// baselineScratch: a baseline decision's buffers, reused (see
// Proxy.candidateBufs).
type baselineScratch struct {
	cands []indexer.Candidate
	ids   []uint64
}

// prefillDone marks the request's prefill done (first token).
func (p *Proxy) prefillDone(t target) {
	switch {
	case t.tracker != nil:
		t.tracker.PrefillDone(t.RequestID)
	case t.RequestID != "" && !t.peer:
		p.rt.PrefillDoneNoWait(t.RequestID)
		p.Kick(t.Model) // its prefill left the queue: a held request may go
	}
}

// release ends the request's load.
func (p *Proxy) release(t target) {
	switch {
	case t.peer:
		p.releasePeer(t)
	case t.RequestID != "":
		p.rt.FreeNoWait(t.RequestID)
	}
	p.slots.give(t.WorkerID)
	p.adm.wakeOne(t.Model) // its slot is free
	if t.RequestID != "" && !t.peer {
		p.Kick(t.Model)
	}
}

// anyReachable reports whether model has a healthy worker the proxy can
// forward to, slots aside.
func (p *Proxy) anyReachable(model string) bool {
	cands, err := p.ix.Candidates(indexer.ModelKey{Model: model})
	if err != nil {
		return false
	}
	for _, c := range cands {
		if p.baseURL(c.Worker.ID) != "" {
			return true
		}
	}
	return false
}
