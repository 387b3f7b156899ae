package policy

import "math/rand/v2"

// newRNG seeds a policy's generator.
func newRNG(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^0x2545F4914F6CDD1D))
}

// argmaxRandom returns the index of the highest score, ties uniformly at
// random (llm-d's max-score picker shuffles, then sorts stably).
func argmaxRandom(rng *rand.Rand, n int, score func(int) float64) int {
	best, pick, ties := 0.0, 0, 0
	for i := range n {
		s := score(i)
		switch {
		case ties == 0 || s > best:
			best, pick, ties = s, i, 1
		case s == best:
			ties++
			if rng.IntN(ties) == 0 {
				pick = i
			}
		}
	}
	return pick
}

// argminFirst returns the index of the lowest value, the first of equals
// (Rust's Iterator::min_by_key, as SGLang picks).
func argminFirst(n int, v func(int) int) int {
	pick := 0
	for i := 1; i < n; i++ {
		if v(i) < v(pick) {
			pick = i
		}
	}
	return pick
}
