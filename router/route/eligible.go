package route

import "github.com/kvhash/kvhash/router/indexer"

// keepEligible filters cands in place to the workers eligible accepts,
// keeping their order (sorted by worker, as the overlap merge needs).
func keepEligible(cands []indexer.Candidate, eligible func(uint64) bool) []indexer.Candidate {
	out := cands[:0]
	for _, c := range cands {
		if eligible(c.Worker.ID) {
			out = append(out, c)
		}
	}
	return out
}
