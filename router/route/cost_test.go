package route

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func f64(v float64) *float64 { return &v }

func TestCostByHand(t *testing.T) {
	load := Load{PrefillTokens: 8, DecodeBlocks: 3}
	cases := []struct {
		name          string
		p             Params
		load          Load
		prompt        int
		overlap       uint32
		cost, prefill float64
	}{
		// raw = (8+16)/4 = 6; credit 2; prefill 4; cost 4 + 3.
		{"defaults", DefaultParams(), load, 16, 2, 7, 4},
		{"half credit", Params{OverlapScoreCredit: 0.5, PrefillLoadScale: 1}, load, 16, 2, 8, 5},
		{"prefill scale 2", Params{OverlapScoreCredit: 1, PrefillLoadScale: 2}, load, 16, 2, 11, 4},
		{"credit beyond the prefill", DefaultParams(), load, 16, 10, 3, 0},
		{"no load, partial block", DefaultParams(), Load{}, 10, 0, 2.5, 2.5},
		{"scale 0: decode only", Params{OverlapScoreCredit: 1, PrefillLoadScale: 0}, load, 16, 0, 3, 6},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cost, prefill := Cost(tc.p, 4, tc.load, tc.prompt, tc.overlap)
			assert.InDelta(t, tc.cost, cost, 1e-12)
			assert.InDelta(t, tc.prefill, prefill, 1e-12)
		})
	}
}

func TestParamsWithOverride(t *testing.T) {
	cases := []struct {
		name    string
		o       *Override
		want    Params
		wantErr string
	}{
		{"none", nil, DefaultParams(), ""},
		{"each field", &Override{OverlapScoreCredit: f64(0.25), PrefillLoadScale: f64(3), RouterTemperature: f64(0.5)}, Params{OverlapScoreCredit: 0.25, PrefillLoadScale: 3, Temperature: 0.5}, ""},
		{"deprecated weight maps to the scale", &Override{OverlapScoreWeight: f64(2)}, Params{OverlapScoreCredit: 1, PrefillLoadScale: 2, Temperature: 0}, ""},
		{"the deprecated name wins when sent (upstream's quirk)", &Override{OverlapScoreWeight: f64(2), PrefillLoadScale: f64(5)}, Params{OverlapScoreCredit: 1, PrefillLoadScale: 2, Temperature: 0}, ""},
		{"a deprecated weight of 0 zeroes the credit too", &Override{OverlapScoreWeight: f64(0), OverlapScoreCredit: f64(0.5)}, Params{OverlapScoreCredit: 0, PrefillLoadScale: 0, Temperature: 0}, ""},
		{"credit above 1", &Override{OverlapScoreCredit: f64(1.5)}, Params{}, "0..1"},
		{"negative temperature", &Override{RouterTemperature: f64(-1)}, Params{}, "router_temperature"},
		{"NaN scale", &Override{PrefillLoadScale: f64(math.NaN())}, Params{}, "prefill_load_scale"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DefaultParams().With(tc.o)
			if tc.wantErr != "" {
				require.ErrorIs(t, err, ErrInvalidParams)
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
