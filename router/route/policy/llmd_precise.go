package policy

import "math/rand/v2"

// LLMDPrecise is llm-d's precise prefix-cache profile (KV events).
const LLMDPrecise = "llmd-precise"

func init() {
	Register(LLMDPrecise, func(env Env) (Policy, error) { return &llmdPrecise{rng: newRNG(env.Seed)}, nil })
}

// The precise profile's weights: prefix 2, KV utilisation 1, queue 1.
const (
	llmdPrecisePrefixWeight = 2
	llmdPreciseKVWeight     = 1
	llmdPreciseQueueWeight  = 1
)

// llmdPrecise scores 2*X' + 1*K + 1*Q (K and Q as llmd's), ties at random,
// where X' is the longest run of leading prompt blocks a pod holds by its
// KV events (the production index), min-max normalised over the pods
// with at least one block matched: the longest scores 1, the shortest 0,
// a pod alone in matching (or all matching equally) 1 however short its
// match, and pods with no match 0 (upstream's
// precise_prefix_cache.go).
type llmdPrecise struct{ rng *rand.Rand }

func (*llmdPrecise) Name() string       { return LLMDPrecise }
func (*llmdPrecise) ReadsOverlap() bool { return true }

func (p *llmdPrecise) Pick(_ *Query, rows []Row) (int, error) {
	prefix := preciseScores(rows)
	queue := queueScores(rows)
	return argmaxRandom(p.rng, len(rows), func(i int) float64 {
		return llmdPrecisePrefixWeight*prefix(i) + llmdPreciseKVWeight*(1-rows[i].Metrics.KVUsage) + llmdPreciseQueueWeight*queue(i)
	}), nil
}

// preciseScores is X': the min-max normalisation over matching pods only.
func preciseScores(rows []Row) func(int) float64 {
	var lo, hi uint32
	seen := false
	for _, r := range rows {
		if r.Overlap == 0 {
			continue
		}
		if !seen {
			lo, hi, seen = r.Overlap, r.Overlap, true
			continue
		}
		lo, hi = min(lo, r.Overlap), max(hi, r.Overlap)
	}
	return func(i int) float64 {
		o := rows[i].Overlap
		switch {
		case o == 0:
			return 0
		case hi == lo:
			return 1
		}
		return float64(o-lo) / float64(hi-lo)
	}
}
