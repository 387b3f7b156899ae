package route

import "math"

// pickLocked returns the index of the chosen candidate: with temperature
// 0 the cheapest, ties broken uniformly at random; with T > 0 a sample
// from softmax(-((cost - min) / (max - min)) / T), which keeps the choice
// independent of the costs' scale. Equal costs sample uniformly.
//
// The costs are finite (Cost caps them), so the normalized cost is in
// [0, 1]; dividing it by T afterwards (not by (max - min) * T, which
// underflows to 0 for a tiny T and spread, giving 0/0 = NaN) gives a
// logit in [-Inf, 0]: exp is in [0, 1], the cheapest weighs 1, and the
// total is at least 1.
func (r *Router) pickLocked(cands []Candidate, temperature float64) int {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range cands {
		lo, hi = min(lo, c.Cost), max(hi, c.Cost)
	}
	if temperature == 0 || hi == lo {
		// Reservoir sampling over the minima: one pass, uniform.
		pick, ties := 0, 0
		for i, c := range cands {
			if c.Cost == lo {
				ties++
				if r.rng.IntN(ties) == 0 {
					pick = i
				}
			}
		}
		return pick
	}
	w := r.scratchW[:0]
	total := 0.0
	for _, c := range cands {
		// The cheapest has logit 0, the dearest -1/T: exp never overflows.
		e := math.Exp(-((c.Cost - lo) / (hi - lo)) / temperature)
		w = append(w, e)
		total += e
	}
	r.scratchW = w
	u := r.rng.Float64() * total
	for i, e := range w {
		if u < e {
			return i
		}
		u -= e
	}
	return len(w) - 1
}
