package route

import (
	"math"
	"time"

	"github.com/kvhash/kvhash/router/indexer"
)

// The predicted-TTFT choice's tie-break and flood guard.
const (
	// Candidates predicted within nearRel of the fastest, plus the time
	// the fastest takes to prefill nearAbsTokens, are near-equal: the
	// least loaded of them (the router's own in-flight requests) is taken,
	// so equal ranks share the load instead of the first fastest taking it
	// all. The absolute part is in tokens (10 ms at the prior's 48k
	// tokens/s), so it scales with the engines' learned speed: a fleet
	// whose clock runs 80x faster (kvrouter demo) gets an 80x narrower
	// window, not one that calls everything equal.
	nearRel       = 0.05
	nearAbsTokens = 485.0
	// A rank whose recent arrival rate (rateWindowS) exceeds floodShare
	// times the candidates' mean plus floodSlack requests a second is not
	// chosen while another is under the cap: no rank takes an unbounded
	// share of a burst, whatever its cache holds. A hot prefix's holder
	// that is capped sends the prefix cold to the fastest other rank,
	// which replicates it.
	floodShare = 2.0
	floodSlack = 2.0
	// The choice minimises total_s + w * own_work_s: the predicted TTFT
	// plus, weighted by how saturated the fleet is, the prefill this
	// request makes every later request on that rank wait for (its
	// externality). w is the larger of two measures of who pays it:
	//   - workMax * q / (q + workHalfTokens), q the candidates' mean
	//     queued prefill tokens: 0 on an idle fleet (pure TTFT), half of
	//     workMax at 24k queued tokens a rank (0.5 s at the prior's speed);
	//     in tokens, not seconds, so that it does not depend on the
	//     engines' speed. (Mooncake trace, old load 1.2: TTFT p90 4.4 s
	//     with w = 0, 1.3 s with w = 1, about 1 s adaptive.)
	//   - workPerWaiting * p, p the candidates' mean requests before their
	//     first token (the router's own count): by Little's law the
	//     requests that queue behind this work before the backlog drains,
	//     each delayed by it; capped at workCap. This one grows with a
	//     saturated fleet's backlog, where every cold copy of a warm
	//     prefix lowers the fleet's throughput (its cache hits) for all.
	//     Measured on the 4,000-request generated tenants family at its
	//     heaviest load: TTFT p90 6.2 s with the first measure alone, 4.6 s
	//     with this at factor 0.5 (0.25 and 1 measured worse); a cap of 32
	//     rather than 16 took the 16,000-request family at load 1.0 from
	//     16.9 s to 5.9 s, and 64 was worse at 1.2 (one seed each).
	workMax        = 4.0
	workHalfTokens = 24_000.0
	workPerWaiting = 0.5
	workCap        = 32.0
)

// predictLocked scores candidate c (its slot, its model when it has no
// slot (an idle rank keeps what it learned), overlap from KV events and
// active depth from the router's own in-flight requests) by predicted
// TTFT. The cached prefix is the longer of what the rank's KV events show
// and what the router already sent it (a queued request's blocks are
// computed before this one's turn).
func (r *Router) predictLocked(dst *Candidate, c indexer.Candidate, slot int32, m *rankModel, ov, depth uint32, promptTokens, blockSize int, now time.Time) {
	cachedBlocks := max(ov, depth)
	cached := min(promptTokens, int(cachedBlocks)*blockSize)
	uncached := uint64(promptTokens - cached)
	var queued uint64
	var k, waiting float64
	if slot >= 0 {
		rl := r.load.ranks[slot]
		queued, k, m = rl.prefillTokens, decodeFactor(rl.requests, rl.prefilling), rl.model
		waiting = rl.gauges.waitingNow(rl.requests, now)
	}
	var own uint64
	speed := 1.0 // no first token seen yet: the fleet's model as it is
	if m != nil && m.n > 0 {
		own, speed = m.n, m.speed()
	}
	// Written in place, field by field: a candidate is ~200 bytes, and
	// building one to copy it was a tenth of a route's CPU.
	r.load.fleet.predictScaledInto(&dst.TTFT, queued, uncached, k, waiting, speed)
	dst.TTFT.CachedTokens, dst.TTFT.Observations = cached, own
	dst.WorkerID, dst.DPRank, dst.OverlapBlocks, dst.Cost = c.Worker.ID, c.Worker.DPRank, ov, dst.TTFT.TotalS
	dst.State, dst.PrefillBlocks, dst.DecodeBlocks = c.State, float64(uncached)/float64(max(blockSize, 1)), 0
}

// pickTTFTLocked returns the fastest candidate by predicted TTFT among the
// ranks under the flood cap (all of them when none is), spreading among
// near-equal ones by the router's own in-flight requests, then the most
// cached tokens (an idle fleet keeps a short prompt with its holder), then
// at random.
func (r *Router) pickTTFTLocked(cands []Candidate, slots []int32) int {
	now := r.now()
	queued := 0.0
	for i := range cands {
		queued += float64(cands[i].TTFT.QueuedTokens)
	}
	queued /= float64(len(cands))
	w := workMax * queued / (queued + workHalfTokens)
	prefilling := 0.0
	for i := range cands {
		if s := slots[i]; s >= 0 {
			prefilling += float64(r.load.ranks[s].prefilling)
		}
	}
	w = min(workCap, max(w, workPerWaiting*prefilling/float64(len(cands))))
	for i := range cands {
		cands[i].TTFT.WorkWeight = w
		// In whole microseconds: an integer formats fast in the answer
		// (shortest-float formatting was 8 % of a route's CPU over HTTP).
		cands[i].Cost = math.Round(finite(cands[i].TTFT.TotalS+w*cands[i].TTFT.OwnWorkS) * 1e6)
	}
	rates := r.scratchW[:0]
	sum := 0.0
	scale := r.load.rateScale(now)
	for i := range cands {
		x := 0.0
		if s := slots[i]; s >= 0 {
			x = r.load.ranks[s].rate * scale
		}
		rates = append(rates, x)
		sum += x
	}
	r.scratchW = rates
	capRate := floodShare*sum/float64(len(cands)) + floodSlack
	allowed := func(i int) bool { return rates[i] <= capRate }
	best, bestAt, any := 0.0, 0, false
	for i := range cands {
		if allowed(i) && (!any || cands[i].Cost < best) {
			best, bestAt, any = cands[i].Cost, i, true
		}
	}
	if !any { // every rank over the cap (cannot happen with a positive slack): all allowed
		allowed = func(int) bool { return true }
		best = cands[0].Cost
		for i := range cands {
			if cands[i].Cost < best {
				best, bestAt = cands[i].Cost, i
			}
		}
	}
	limit := best*(1+nearRel) + nearAbsTokens/cands[bestAt].TTFT.TokensPerS*1e6 // costs are in microseconds
	pick, ties, least := -1, 0, 0
	for i := range cands {
		if !allowed(i) || cands[i].Cost > limit {
			continue
		}
		n := 0
		if s := slots[i]; s >= 0 {
			n = r.load.ranks[s].requests
		}
		switch {
		case pick < 0 || n < least || (n == least && cands[i].TTFT.CachedTokens > cands[pick].TTFT.CachedTokens):
			pick, ties, least = i, 1, n
		case n == least && cands[i].TTFT.CachedTokens == cands[pick].TTFT.CachedTokens:
			ties++
			if r.rng.IntN(ties) == 0 {
				pick = i
			}
		}
	}
	return pick
}
