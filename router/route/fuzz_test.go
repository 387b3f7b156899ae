package route

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzRoute drives Route with arbitrary prompts and overrides: it must
// answer or return an error, never panic, and an answer is well formed
// (the chosen worker is the cheapest at temperature 0, costs are finite
// and sorted).
func FuzzRoute(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, 1.0, 1.0, 0.0, -1.0)
	f.Add([]byte{}, 0.0, 0.0, 0.0, 2.0)
	f.Add([]byte{9, 9, 9, 9}, 0.5, 3.0, 1.5, -1.0)
	f.Fuzz(func(t *testing.T, data []byte, credit, scale, temp, weight float64) {
		fx := newFixture(t, 3, Options{})
		prompt := make([]uint32, len(data))
		for i, c := range data {
			prompt[i] = uint32(c % 8)
		}
		fx.cache(1, prompt, len(prompt)/bs)
		o := &Override{OverlapScoreCredit: &credit, PrefillLoadScale: &scale, RouterTemperature: &temp}
		if weight >= 0 {
			o.OverlapScoreWeight = &weight
		}
		for range 3 {
			d, err := fx.r.Route(Request{Model: "m", TokenIDs: prompt, Override: o})
			if err != nil {
				require.ErrorIs(t, err, ErrInvalidParams)
				return
			}
			require.Len(t, d.Candidates, 3)
			for i, c := range d.Candidates {
				require.False(t, math.IsNaN(c.Cost) || math.IsInf(c.Cost, 0), "cost %v", c.Cost)
				if i > 0 {
					require.LessOrEqual(t, d.Candidates[i-1].Cost, c.Cost)
				}
			}
			if temp == 0 {
				require.Equal(t, d.Candidates[0].Cost, d.Cost)
			}
		}
	})
}
