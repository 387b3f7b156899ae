package route

import "fmt"

// Params are Dynamo's cost knobs (reference kv-events.md §3).
type Params struct {
	// OverlapScoreCredit: the prefill blocks credited per cached block,
	// 0..1 (1: a cached block costs nothing to prefill).
	OverlapScoreCredit float64 `json:"overlap_score_credit"`
	// PrefillLoadScale weighs prefill blocks against decode blocks.
	PrefillLoadScale float64 `json:"prefill_load_scale"`
	// Temperature: 0 picks the cheapest (ties at random); T > 0 samples
	// from a softmax over the normalized negated costs.
	Temperature float64 `json:"router_temperature"`
	// Cost is the cost model: CostDynamo ("" too: Dynamo's default cost,
	// cost.go) or CostTTFT (the predicted time to first token, in
	// seconds, predict.go). Router-wide, not overridable per request.
	Cost string `json:"-"`
}

// The cost models (Params.Cost).
const (
	CostDynamo = "dynamo"
	CostTTFT   = "ttft"
)

// DefaultParams are Dynamo's defaults: credit 1, scale 1, temperature 0.
func DefaultParams() Params {
	return Params{OverlapScoreCredit: 1, PrefillLoadScale: 1, Temperature: 0}
}

// Override is a request's router_config_override: each set field
// replaces the router's value for that request.
type Override struct {
	OverlapScoreCredit *float64 `json:"overlap_score_credit,omitempty"`
	PrefillLoadScale   *float64 `json:"prefill_load_scale,omitempty"`
	// OverlapScoreWeight is the deprecated name of PrefillLoadScale. As
	// upstream (Dynamo's RouterConfigOverride::try_from), when sent it
	// wins over PrefillLoadScale, and a weight of 0 also sets the credit
	// to 0 (the old formula had no credit to keep).
	OverlapScoreWeight *float64 `json:"overlap_score_weight,omitempty"`
	RouterTemperature  *float64 `json:"router_temperature,omitempty"`
}

// With returns p with o's fields applied, validated.
func (p Params) With(o *Override) (Params, error) {
	if o != nil {
		if o.PrefillLoadScale != nil {
			p.PrefillLoadScale = *o.PrefillLoadScale
		}
		if o.OverlapScoreCredit != nil {
			p.OverlapScoreCredit = *o.OverlapScoreCredit
		}
		if o.OverlapScoreWeight != nil {
			p.PrefillLoadScale = *o.OverlapScoreWeight
			if *o.OverlapScoreWeight == 0 {
				p.OverlapScoreCredit = 0
			}
		}
		if o.RouterTemperature != nil {
			p.Temperature = *o.RouterTemperature
		}
	}
	return p, p.Validate()
}

// The knobs' upper bounds. A scale or temperature this large already
// makes prefill load (or chance) decide alone; larger ones only risk
// overflowing the cost (1.7e308 times a few blocks is +Inf).
const (
	MaxPrefillLoadScale = 1e6
	MaxTemperature      = 1e6
)

// Validate reports a knob out of range or not finite: the credit outside
// 0..1, the scale outside 0..MaxPrefillLoadScale, the temperature outside
// 0..MaxTemperature.
func (p Params) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
		max  float64
	}{
		{"overlap_score_credit", p.OverlapScoreCredit, 1},
		{"prefill_load_scale", p.PrefillLoadScale, MaxPrefillLoadScale},
		{"router_temperature", p.Temperature, MaxTemperature},
	} {
		// Written so that NaN fails too.
		if !(f.v >= 0 && f.v <= f.max) {
			return fmt.Errorf("%w: %s is %v, want 0..%v", ErrInvalidParams, f.name, f.v, f.max)
		}
	}
	if p.Cost != "" && p.Cost != CostDynamo && p.Cost != CostTTFT {
		return fmt.Errorf("%w: cost model %q, want %q or %q", ErrInvalidParams, p.Cost, CostDynamo, CostTTFT)
	}
	return nil
}
