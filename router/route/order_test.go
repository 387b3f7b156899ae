package route

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSortCandidatesMatchesComparison: the key sort orders candidates
// exactly as the plain (cost, worker, rank) comparison does, with ties,
// zeros of both signs, already sorted input and the NaN fallback.
func TestSortCandidatesMatchesComparison(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	costs := []float64{0, math.Copysign(0, -1), 0.5, 1, 1, 2.25, 1e300, math.Inf(1)}
	var keys []costKey
	var tmp []Candidate
	for _, tc := range []struct {
		name   string
		n      int
		sorted bool
		nan    bool
	}{
		{"empty", 0, false, false},
		{"one", 1, false, false},
		{"ties", 128, false, false},
		{"already sorted", 64, true, false},
		{"nan falls back", 32, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 50 {
				out := make([]Candidate, tc.n)
				for i := range out {
					out[i] = Candidate{
						WorkerID: uint64(rng.IntN(8)), DPRank: uint32(rng.IntN(3)),
						Cost: costs[rng.IntN(len(costs))], OverlapBlocks: uint32(i),
					}
				}
				if tc.sorted {
					slices.SortFunc(out, compareCandidates)
				}
				if tc.nan && tc.n > 0 {
					out[rng.IntN(tc.n)].Cost = math.NaN()
				}
				want := slices.Clone(out)
				slices.SortFunc(want, compareCandidates)
				keys, tmp = sortCandidates(out, keys, tmp)
				require.Len(t, out, len(want))
				for i := range want {
					// Equal keys may hold different candidates (duplicate
					// worker and rank here), so compare what orders them.
					require.Zero(t, compareCandidates(want[i], out[i]), "position %d: %+v vs %+v", i, want[i], out[i])
				}
				require.True(t, slices.IsSortedFunc(out, compareCandidates))
				seen := make([]bool, tc.n) // a permutation: each candidate once
				for _, c := range out {
					require.False(t, seen[c.OverlapBlocks])
					seen[c.OverlapBlocks] = true
				}
			}
		})
	}
}

// BenchmarkSortCandidates: 128 candidates with a route's spread of costs
// (many ties), by key and by the plain comparison.
func BenchmarkSortCandidates(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	in := make([]Candidate, 128)
	for i := range in {
		in[i] = Candidate{WorkerID: uint64(i + 1), Cost: float64(16 + rng.IntN(40))}
	}
	out := make([]Candidate, len(in))
	b.Run("keys", func(b *testing.B) {
		var keys []costKey
		var tmp []Candidate
		for b.Loop() {
			copy(out, in)
			keys, tmp = sortCandidates(out, keys, tmp)
		}
	})
	b.Run("comparison", func(b *testing.B) {
		for b.Loop() {
			copy(out, in)
			slices.SortFunc(out, compareCandidates)
		}
	})
}
