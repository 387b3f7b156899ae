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
	cands, err := p.ix.Candidates(key)
	if err != nil {
		return target{}, routeError(err)
	}
	// Ranks of one worker share its base URL: the baselines choose among
	// workers, as a plain load balancer does.
	ids := make([]uint64, 0, len(cands))
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
	p.mu.Lock()
	defer p.mu.Unlock()
	// Only the workers with a free slot (backpressure, admission.go).
	ids = slices.DeleteFunc(ids, func(id uint64) bool { return !p.hasSlotLocked(id) })
	if len(ids) == 0 {
		return target{}, errSaturated
	}
	var id uint64
	switch pol {
	case PolicyRoundRobin:
		id = ids[int((p.rrNext.Add(1)-1)%uint64(len(ids)))]
	case PolicyRandom:
		id = ids[p.rng.IntN(len(ids))]
	case PolicyLeastLoaded:
		best, ties := -1, 0
		for _, c := range ids {
			n := p.inflight[c]
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
	p.inflight[id]++
	return target{WorkerID: id, BaseURL: p.baseURLs[id], Model: req.Model}, nil
}

func (p *Proxy) pickKV(req clientRequest, tokens []uint32) (target, error) {
	// The router names the request: a name the proxy made up could be one
	// a client of /v1/route already uses.
	// Only the workers it can forward to: a worker registered without a
	// base_url is a candidate for /v1/route's clients, not for the proxy.
	// And only those with a free slot (backpressure, admission.go).
	reachable := func(id uint64) bool {
		if p.baseURL(id) == "" {
			return false
		}
		p.mu.RLock()
		defer p.mu.RUnlock()
		return p.hasSlotLocked(id)
	}
	d, err := p.rt.Route(route.Request{Model: req.Model, TokenIDs: tokens, CacheSalt: req.CacheSalt, Eligible: reachable,
		// The proxy frees what it forwards when the answer ends: a stream
		// longer than the request TTL still counts as load.
		Held: true})
	if errors.Is(err, route.ErrNoCandidates) && p.anyReachable(req.Model) {
		return target{}, errSaturated
	}
	if err != nil {
		return target{}, routeError(err)
	}
	id := d.RequestID
	u := p.baseURL(d.WorkerID)
	if u == "" {
		p.rt.Free(id)
		return target{}, unavailable("no_base_url", "worker %d was chosen but was registered without a base_url: register engines with base_url to proxy to them", d.WorkerID)
	}
	p.mu.Lock()
	if !p.hasSlotLocked(d.WorkerID) {
		// Another request took its last slot since the route looked.
		p.mu.Unlock()
		p.rt.Free(id)
		return target{}, errSaturated
	}
	p.inflight[d.WorkerID]++
	p.mu.Unlock()
	return target{WorkerID: d.WorkerID, BaseURL: u, Model: req.Model, RequestID: id, Overlap: d.OverlapBlocks}, nil
}

// prefillDone marks the request's prefill done (first token).
func (p *Proxy) prefillDone(t target) {
	switch {
	case t.tracker != nil:
		t.tracker.PrefillDone(t.RequestID)
	case t.RequestID != "" && !t.peer:
		p.rt.PrefillDone(t.RequestID)
	}
}

// release ends the request's load.
func (p *Proxy) release(t target) {
	switch {
	case t.peer:
		p.releasePeer(t)
	case t.RequestID != "":
		p.rt.Free(t.RequestID)
	}
	p.mu.Lock()
	if p.inflight[t.WorkerID] <= 1 {
		delete(p.inflight, t.WorkerID)
	} else {
		p.inflight[t.WorkerID]--
	}
	p.mu.Unlock()
	p.adm.wakeOne(t.Model) // its slot is free
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
