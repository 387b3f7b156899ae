package indexbench

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMedianRatioPairsAdjacentRuns(t *testing.T) {
	ops := func(vs ...float64) []Figures {
		fs := make([]Figures, len(vs))
		for i, v := range vs {
			fs[i].BlockOpsPerS = v
		}
		return fs
	}
	get := func(f Figures) float64 { return f.BlockOpsPerS }
	for _, tc := range []struct {
		name   string
		a, b   []Figures
		pairs  []float64
		median float64
	}{
		{"none", nil, nil, []float64{}, 0},
		{"one", ops(3), ops(2), []float64{1.5}, 1.5},
		// A slow stretch over the second pair slows both of its runs
		// alike: its ratio is the others'.
		{"slow stretch", ops(60, 30, 45), ops(40, 20, 30), []float64{1.5, 1.5, 1.5}, 1.5},
		{"odd count", ops(10, 30, 20), ops(10, 10, 10), []float64{1, 3, 2}, 2},
		{"even count: mean of the middle two", ops(10, 40, 20, 30), ops(10, 10, 10, 10), []float64{1, 4, 2, 3}, 2.5},
		{"unequal lengths pair up to the shorter", ops(4, 8, 100), ops(2, 4), []float64{2, 2}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.pairs, PairedRatios(tc.a, tc.b, get))
			assert.InDelta(t, tc.median, MedianRatio(tc.a, tc.b, get), 1e-12)
		})
	}
}
