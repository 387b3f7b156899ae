package engine

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"time"
)

// Profile is an engine's timing: how long a scheduler step takes, from the
// step's new prefill tokens, their context and the decode batch's KV use.
// See profiles/README.md for the file format.
type Profile struct {
	Name   string `json:"name"`
	Source string `json:"source"`

	// Prefill ms = PrefillT2*T^2 + PrefillT1*T + PrefillT0 for T new
	// tokens, plus PrefillContext per (new token x context token).
	PrefillT2      float64 `json:"prefill_t2_ms"`
	PrefillT1      float64 `json:"prefill_t1_ms"`
	PrefillT0      float64 `json:"prefill_t0_ms"`
	PrefillContext float64 `json:"prefill_context_ms"`
	// PrefillPerSequence evaluates the polynomial per request chunk and
	// sums (the older mocker); false: once over the step's total.
	PrefillPerSequence bool `json:"prefill_per_sequence"`

	// Decode ms = max(DecodeMin, DecodeP2*p^2 + DecodeP1*p + DecodeP0)
	// for the KV use fraction p.
	DecodeP2  float64 `json:"decode_p2_ms"`
	DecodeP1  float64 `json:"decode_p1_ms"`
	DecodeP0  float64 `json:"decode_p0_ms"`
	DecodeMin float64 `json:"decode_min_ms"`
}

//go:embed profiles/dynamo-mocker.json
var dynamoMockerJSON []byte

// DefaultProfile is Dynamo's mocker timing (profiles/dynamo-mocker.json).
func DefaultProfile() Profile {
	p, err := ParseProfile(dynamoMockerJSON)
	if err != nil { // the embedded file is tested; this cannot happen
		panic(fmt.Sprintf("engine: embedded profile: %v", err))
	}
	return p
}

// LoadProfile reads a profile file.
func LoadProfile(path string) (Profile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Profile{}, fmt.Errorf("engine profile: %w", err)
	}
	p, err := ParseProfile(b)
	if err != nil {
		return Profile{}, fmt.Errorf("engine profile %s: %w", path, err)
	}
	return p, nil
}

// ParseProfile decodes a profile from JSON, refusing unknown fields,
// missing or non-finite numbers.
func ParseProfile(b []byte) (Profile, error) {
	// Decode into pointers first so that a missing field is told apart
	// from a zero.
	var raw struct {
		Name               *string  `json:"name"`
		Source             *string  `json:"source"`
		PrefillT2          *float64 `json:"prefill_t2_ms"`
		PrefillT1          *float64 `json:"prefill_t1_ms"`
		PrefillT0          *float64 `json:"prefill_t0_ms"`
		PrefillContext     *float64 `json:"prefill_context_ms"`
		PrefillPerSequence *bool    `json:"prefill_per_sequence"`
		DecodeP2           *float64 `json:"decode_p2_ms"`
		DecodeP1           *float64 `json:"decode_p1_ms"`
		DecodeP0           *float64 `json:"decode_p0_ms"`
		DecodeMin          *float64 `json:"decode_min_ms"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return Profile{}, fmt.Errorf("decoding: %w", err)
	}
	if dec.More() {
		return Profile{}, errors.New("decoding: more than one JSON value")
	}
	var errs []error
	num := func(name string, v *float64) float64 {
		if v == nil {
			errs = append(errs, fmt.Errorf("%s is missing", name))
			return 0
		}
		return *v
	}
	p := Profile{
		PrefillT2:      num("prefill_t2_ms", raw.PrefillT2),
		PrefillT1:      num("prefill_t1_ms", raw.PrefillT1),
		PrefillT0:      num("prefill_t0_ms", raw.PrefillT0),
		PrefillContext: num("prefill_context_ms", raw.PrefillContext),
		DecodeP2:       num("decode_p2_ms", raw.DecodeP2),
		DecodeP1:       num("decode_p1_ms", raw.DecodeP1),
		DecodeP0:       num("decode_p0_ms", raw.DecodeP0),
		DecodeMin:      num("decode_min_ms", raw.DecodeMin),
	}
	if raw.Name == nil || *raw.Name == "" {
		errs = append(errs, errors.New("name is missing"))
	} else {
		p.Name = *raw.Name
	}
	if raw.Source != nil {
		p.Source = *raw.Source
	}
	if raw.PrefillPerSequence != nil {
		p.PrefillPerSequence = *raw.PrefillPerSequence
	}
	if len(errs) > 0 {
		return Profile{}, errors.Join(errs...)
	}
	if err := p.Validate(); err != nil {
		return Profile{}, err
	}
	return p, nil
}

// Validate refuses non-finite coefficients and a negative decode floor.
// (JSON cannot spell NaN or infinities, but a Profile built in Go can.)
func (p Profile) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"prefill_t2_ms", p.PrefillT2}, {"prefill_t1_ms", p.PrefillT1}, {"prefill_t0_ms", p.PrefillT0},
		{"prefill_context_ms", p.PrefillContext},
		{"decode_p2_ms", p.DecodeP2}, {"decode_p1_ms", p.DecodeP1}, {"decode_p0_ms", p.DecodeP0},
		{"decode_min_ms", p.DecodeMin},
	} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			errs = append(errs, fmt.Errorf("%s = %v: must be a finite number", f.name, f.v))
		}
	}
	if p.DecodeMin < 0 {
		errs = append(errs, fmt.Errorf("decode_min_ms = %v: must not be negative", p.DecodeMin))
	}
	return errors.Join(errs...)
}

// PrefillMs is the polynomial's time for t new tokens (0 for none). A
// polynomial that dips below zero counts as zero.
func (p Profile) PrefillMs(t int) float64 {
	if t <= 0 {
		return 0
	}
	x := float64(t)
	return max(0, p.PrefillT2*x*x+p.PrefillT1*x+p.PrefillT0)
}

// DecodeMs is one decode step's time at KV use fraction kvUse.
func (p Profile) DecodeMs(kvUse float64) float64 {
	return max(p.DecodeMin, p.DecodeP2*kvUse*kvUse+p.DecodeP1*kvUse+p.DecodeP0)
}

// msToDuration converts model milliseconds to a Duration, rounded to the
// nanosecond.
func msToDuration(ms float64) time.Duration {
	return time.Duration(math.Round(ms * 1e6))
}
