package indexer

import (
	"fmt"
	"strings"

	"github.com/kvhash/kvhash/router/enginehash"
)

// Verdict is what the router concluded about a rank's engine block ids
// from its root stores (see verify.go).
type Verdict uint8

// The verdicts.
const (
	// VerdictPending: no root store checked yet.
	VerdictPending Verdict = iota
	// VerdictVerified: root stores reproduce under one scheme and seed.
	VerdictVerified
	// VerdictUnverifiable: the root stores seen cannot decide (a LoRA
	// store whose adapter path is unknown, an xxhash scheme whose seed is
	// not known, ...); Reason says why.
	VerdictUnverifiable
	// VerdictUnstable: a conclusive root store matches no deterministic
	// candidate: what a random root per process gives.
	VerdictUnstable
	numVerdicts
)

var verdictNames = [numVerdicts]string{"pending", "verified", "unverifiable", "unstable"}

func (v Verdict) String() string {
	if v < numVerdicts {
		return verdictNames[v]
	}
	return "unknown"
}

// MarshalText writes the verdict's name.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// Verdicts lists every verdict (metrics, docs).
func Verdicts() []Verdict {
	return []Verdict{VerdictPending, VerdictVerified, VerdictUnverifiable, VerdictUnstable}
}

// EngineHashInfo is one rank's engine-hash verification, a copy.
type EngineHashInfo struct {
	Verdict Verdict
	// Scheme and Seed: the candidate the rank is verified under (Seed is
	// vLLM's NONE_HASH seed; "" for other schemes).
	Scheme enginehash.Scheme
	Seed   string
	// Reason explains an unverifiable or unstable verdict.
	Reason string
	// RootStores: root stores seen; Checked: how many were recomputed
	// (the first few, then a sample); Mismatches: conclusive ones that
	// matched no candidate.
	RootStores, Checked, Mismatches uint64
	// ChainChecked and ChainMismatches: chained blocks recomputed from the
	// parent's digest (Options.VerifyChained only).
	ChainChecked, ChainMismatches uint64
	// Disagrees: another worker rank of the same (model, tenant) is
	// verified under another scheme or seed.
	Disagrees bool
}

// Candidate returns the verified candidate (meaningful when verified).
func (e EngineHashInfo) Candidate() enginehash.Candidate {
	return enginehash.Candidate{Scheme: e.Scheme, Seed: e.Seed}
}

// EngineHashSetting is a worker's parsed engine_hash: "auto" (or empty),
// "SCHEME", "SCHEME:SEED" (vLLM schemes only: the engine's
// PYTHONHASHSEED, or vLLM's fixed default "vllm-none-hash"), or "off" (no
// verification: an engine whose scheme the router does not know, or a
// test publisher with made-up ids).
type EngineHashSetting struct {
	Off     bool
	Auto    bool
	Scheme  enginehash.Scheme
	Seed    string
	HasSeed bool
}

// ParseEngineHash reads a worker's engine_hash setting. Scheme names are
// enginehash's or vLLM's own (sha256_cbor, xxhash, ...).
func ParseEngineHash(s string) (EngineHashSetting, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "auto") {
		return EngineHashSetting{Auto: true}, nil
	}
	if strings.EqualFold(s, "off") {
		return EngineHashSetting{Off: true}, nil
	}
	name, seed, hasSeed := strings.Cut(s, ":")
	scheme, err := enginehash.ParseScheme(name)
	if err != nil {
		return EngineHashSetting{}, fmt.Errorf("engine_hash %q: want auto, SCHEME or SCHEME:SEED: %w", s, err)
	}
	if hasSeed && !scheme.IsVLLM() {
		return EngineHashSetting{}, fmt.Errorf("engine_hash %q: %s has no seed (only vLLM's schemes do)", s, scheme)
	}
	return EngineHashSetting{Scheme: scheme, Seed: seed, HasSeed: hasSeed}, nil
}

// String is the setting as written in a config.
func (e EngineHashSetting) String() string {
	switch {
	case e.Off:
		return "off"
	case e.Auto:
		return "auto"
	case e.HasSeed:
		return string(e.Scheme) + ":" + e.Seed
	}
	return string(e.Scheme)
}

// candidates is what the setting tries: auto tries enginehash's defaults
// and the operator's seeds; a vLLM scheme without a seed tries its usual
// seeds (the fixed default for the SHA-256 schemes, "0", the operator's).
func (e EngineHashSetting) candidates(extraSeeds []string) []enginehash.Candidate {
	if e.Auto {
		return enginehash.DefaultCandidates(extraSeeds...)
	}
	if !e.Scheme.IsVLLM() {
		return []enginehash.Candidate{{Scheme: e.Scheme}}
	}
	if e.HasSeed {
		return []enginehash.Candidate{{Scheme: e.Scheme, Seed: e.Seed}}
	}
	var seeds []string
	if !e.Scheme.RandomRootByDefault() {
		seeds = append(seeds, enginehash.DefaultVLLMSeed)
	}
	seeds = append(seeds, "0")
	out := make([]enginehash.Candidate, 0, len(seeds)+len(extraSeeds))
	seen := map[string]bool{}
	for _, s := range append(seeds, extraSeeds...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, enginehash.Candidate{Scheme: e.Scheme, Seed: s})
		}
	}
	return out
}

// seedUnknown reports whether a non-match under this setting cannot be
// blamed on the engine: an xxhash scheme named without its seed, whose
// root is the engine's PYTHONHASHSEED the router was not told.
func (e EngineHashSetting) seedUnknown() bool {
	return !e.Auto && !e.HasSeed && e.Scheme.RandomRootByDefault()
}
