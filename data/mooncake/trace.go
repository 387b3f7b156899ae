// Package mooncaketrace embeds the vendored Mooncake synthetic trace
// (ATTRIBUTION.md), the default trace of `kvrouter sim` and of
// make bench-routing, so the binary replays it from any directory.
package mooncaketrace

import (
	"bytes"
	_ "embed" // the trace file

	"github.com/kvhash/kvhash/internal/mooncake"
)

// SHA256 is the vendored file's digest, as published with it.
const SHA256 = "bd070915a98fc0ed264d7cfef2ce746002eb3076a695ec31ba2674c0111ec131"

// Name names the embedded trace in reports.
const Name = "mooncake-synthetic (kvcache-ai/Mooncake FAST25-release/traces/synthetic_trace.jsonl @3b5a5941)"

//go:embed synthetic_trace.jsonl
var synthetic []byte

// Synthetic returns the trace's bytes (a copy: callers cannot alter the
// embedded data).
func Synthetic() []byte { return bytes.Clone(synthetic) }

// Requests parses the embedded trace.
func Requests() ([]mooncake.Request[float64], error) {
	return mooncake.Read[float64](bytes.NewReader(synthetic))
}
