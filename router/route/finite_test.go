package route

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/indexer"
)

// Issue 24 item 7: prefill_load_scale 1.7e308 with temperature 1 made
// every candidate's cost +Inf (null in the answer) and the choice
// arbitrary. Overrides are bounded, and the cost and the choice stay
// finite whatever they are given.

func TestParamsAreBounded(t *testing.T) {
	cases := []struct {
		name    string
		o       Override
		wantErr string
	}{
		{"the scale that overflowed", Override{PrefillLoadScale: f64(1.7e308), RouterTemperature: f64(1)}, "prefill_load_scale"},
		{"the deprecated name too", Override{OverlapScoreWeight: f64(1.7e308)}, "prefill_load_scale"},
		{"scale just above the bound", Override{PrefillLoadScale: f64(1e6 * 1.5)}, "0..1e+06"},
		{"scale at the bound", Override{PrefillLoadScale: f64(1e6)}, ""},
		{"infinite temperature", Override{RouterTemperature: f64(math.Inf(1))}, "router_temperature"},
		{"temperature above the bound", Override{RouterTemperature: f64(2 * 1e6)}, "router_temperature"},
		{"temperature at the bound", Override{RouterTemperature: f64(1e6)}, ""},
		{"NaN credit", Override{OverlapScoreCredit: f64(math.NaN())}, "overlap_score_credit"},
		{"tiny temperature", Override{RouterTemperature: f64(5e-324)}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DefaultParams().With(&tc.o)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalidParams)
			assert.ErrorContains(t, err, tc.wantErr)
		})
	}
}

func TestRouteRefusesTheOverflowingOverride(t *testing.T) {
	fx := newFixture(t, 3, Options{})
	prompt := tokens(1, 4*bs)
	fx.cache(1, prompt, 2)
	_, err := fx.r.Route(Request{Model: "m", TokenIDs: prompt,
		Override: &Override{PrefillLoadScale: f64(1.7e308), RouterTemperature: f64(1)}})
	require.ErrorIs(t, err, ErrInvalidParams)

	// The largest scale allowed, with a temperature, gives finite costs.
	d, err := fx.r.Route(Request{Model: "m", TokenIDs: prompt,
		Override: &Override{PrefillLoadScale: f64(1e6), RouterTemperature: f64(1)}})
	require.NoError(t, err)
	for _, c := range d.Candidates {
		assert.True(t, isFinite(c.Cost) && isFinite(c.PrefillBlocks), "%+v", c)
	}
	assert.True(t, isFinite(d.Cost))
}

func TestCostIsFiniteAtTheExtremes(t *testing.T) {
	huge := Load{PrefillTokens: math.MaxUint64, DecodeBlocks: math.MaxUint64}
	cases := []struct {
		name string
		p    Params
		bs   int
		l    Load
	}{
		{"bounds and the largest loads", Params{PrefillLoadScale: 1e6}, 1, huge},
		{"a scale never validated", Params{PrefillLoadScale: 1.7e308}, 1, huge},
		{"an infinite scale never validated", Params{PrefillLoadScale: math.Inf(1)}, 1, Load{}},
		{"a NaN credit never validated", Params{OverlapScoreCredit: math.NaN(), PrefillLoadScale: 1}, 16, Load{}},
		{"block size 0", DefaultParams(), 0, Load{PrefillTokens: 5}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cost, prefill := Cost(tc.p, tc.bs, tc.l, math.MaxInt, 3)
			assert.True(t, isFinite(cost) && cost >= 0, "cost %v", cost)
			assert.True(t, isFinite(prefill) && prefill >= 0, "prefill %v", prefill)
		})
	}
}

// A temperature so small that (max - min) * T underflowed to 0 made the
// cheapest's weight 0/0 = NaN, and the pick fell through to the last
// (dearest) candidate.
func TestPickWithATinyTemperatureTakesTheCheapest(t *testing.T) {
	fx := newFixture(t, 0, Options{})
	cases := []struct {
		name  string
		costs []float64
		temp  float64
		want  int
	}{
		{"tiny spread, tiny temperature", []float64{1, 1 + 2.220446049250313e-16}, 1e-310, 0},
		{"the dearest first", []float64{math.MaxFloat64, 0}, 5e-324, 1},
		{"spread of the whole float range", []float64{0, math.MaxFloat64, math.MaxFloat64}, 1e-300, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cands := make([]Candidate, len(tc.costs))
			for i, c := range tc.costs {
				cands[i].Cost = c
			}
			for range 50 {
				require.Equal(t, tc.want, fx.r.pickLocked(cands, tc.temp))
			}
			for _, w := range fx.r.scratchW {
				assert.True(t, isFinite(w), "weight %v", w)
			}
		})
	}
}

// FuzzCost: whatever the knobs (validated or not), loads and prompt, the
// cost and its prefill term are finite and >= 0, and a softmax pick over
// such costs lands on a candidate with finite weights.
func FuzzCost(f *testing.F) {
	f.Add(1.0, 1.7e308, 1.0, uint64(8), uint64(3), 16, 4, uint32(2))
	f.Add(0.5, 1e6, 1e-310, uint64(math.MaxUint64), uint64(math.MaxUint64), math.MaxInt, 1, uint32(0))
	f.Add(math.NaN(), math.Inf(1), 0.0, uint64(0), uint64(0), 0, 0, uint32(7))
	ix, err := indexer.New(indexer.Options{BlockSize: bs, Mode: core.ModeWarn})
	require.NoError(f, err)
	r, err := New(ix, Options{Seed: 7})
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, credit, scale, temp float64, prefill, decode uint64, prompt, blockSize int, overlap uint32) {
		p := Params{OverlapScoreCredit: credit, PrefillLoadScale: scale, Temperature: temp}
		cands := make([]Candidate, 0, 3)
		for i := range uint64(3) {
			cost, pre := Cost(p, blockSize, Load{PrefillTokens: prefill >> i, DecodeBlocks: decode >> (2 * i)}, prompt, overlap)
			require.True(t, isFinite(cost) && cost >= 0, "cost %v", cost)
			require.True(t, isFinite(pre) && pre >= 0, "prefill %v", pre)
			cands = append(cands, Candidate{Cost: cost})
		}
		if p.Validate() != nil || temp == 0 {
			return
		}
		pick := r.pickLocked(cands, temp)
		require.True(t, pick >= 0 && pick < len(cands))
		for _, w := range r.scratchW {
			require.True(t, isFinite(w) && w >= 0, "weight %v", w)
		}
	})
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
