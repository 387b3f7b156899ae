package route

import (
	"fmt"

	"github.com/kvhash/kvhash/router/indexer"
)

// What a router-side admission queue (router/route/admit) asks of the
// router: whether every engine already has enough prefill queued that a
// new request would only wait behind it, and how long a held request's
// own prefill is predicted to take (its place in the queue).

// Saturated reports whether every candidate rank of key that eligible
// accepts (nil: all) has at least holdTokens of prefill this router sent
// it and has not seen start (routed, no first token yet). Ranks of every
// state count: the router routes to them all.
// A key with no candidate is not saturated: routing it says why.
func (r *Router) Saturated(key indexer.ModelKey, eligible func(uint64) bool, holdTokens uint64) (bool, error) {
	sc, ok := r.scratch.Get()
	if !ok {
		sc = new(scratch)
	}
	defer r.scratch.Put(sc)
	cands, err := r.ix.AppendCandidates(sc.cands[:0], key)
	sc.cands = cands
	if err != nil {
		return false, fmt.Errorf("route: %w", err)
	}
	r.lock()
	defer r.unlock()
	seen := false
	for _, c := range cands {
		if eligible != nil && !eligible(c.Worker.ID) {
			continue
		}
		seen = true
		s, ok := r.load.slotOf[c.Worker]
		if !ok || r.load.ranks[s].prefillTokens < holdTokens {
			return false, nil
		}
	}
	return seen, nil
}

// Estimate is a request's prefill as the router would see it now.
type Estimate struct {
	// UncachedTokens: the prompt's tokens past the longest prefix a live
	// candidate rank holds (its KV events).
	UncachedTokens int
	// ServiceS: the fleet's learned time to prefill them on an idle rank
	// (the predicted-TTFT model's overhead plus per-token cost).
	ServiceS float64
}

// Estimate hashes the request's prompt and looks up its longest cached
// prefix among the live candidates, without routing it or counting load.
func (r *Router) Estimate(req Request) (Estimate, error) {
	key := indexer.ModelKey{Model: req.Model, Tenant: req.Tenant}
	local, err := r.ix.AppendPromptHashes(nil, req.TokenIDs, indexer.PromptOptions{LoraName: req.LoraName, CacheSalt: req.CacheSalt})
	if err != nil {
		return Estimate{}, fmt.Errorf("route: %w", err)
	}
	overlaps, err := r.ix.AppendOverlaps(nil, key, local, false)
	if err != nil {
		return Estimate{}, fmt.Errorf("route: %w", err)
	}
	var best uint32
	for _, o := range overlaps {
		if req.Eligible == nil || req.Eligible(o.Worker.ID) {
			best = max(best, o.Blocks)
		}
	}
	u := max(0, len(req.TokenIDs)-int(best)*r.ix.BlockSize())
	r.lock()
	t := r.load.fleet.predict(0, uint64(u), 0, 0)
	r.unlock()
	return Estimate{UncachedTokens: u, ServiceS: t.PrefillS}, nil
}
