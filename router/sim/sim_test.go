package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/internal/mooncake"
	"github.com/kvhash/kvhash/router/engine"
	"github.com/kvhash/kvhash/router/route/policy"
)

func TestRunIsDeterministic(t *testing.T) {
	cfg := smallConfig(smallTrace(1, 120))
	cfg.Seeds = 2
	a, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	cfg.Parallel = 1 // another schedule of the runs, the same numbers
	b, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	ja, err := json.Marshal(a)
	require.NoError(t, err)
	jb, err := json.Marshal(b)
	require.NoError(t, err)
	assert.Equal(t, string(ja), string(jb), "same seeds, same results.json")

	require.Len(t, a.Rows, 2*len(policy.Names()))
	seeds := map[string][]Row{}
	for _, r := range a.Rows {
		assert.Zero(t, r.Failed, r.Policy)
		assert.Equal(t, 120, r.Requests)
		assert.Greater(t, r.TTFTP90, 0.0, r.Policy)
		seeds[r.Policy] = append(seeds[r.Policy], r)
	}
	assert.NotEqual(t, seeds[policy.Random][0].TTFTMean, seeds[policy.Random][1].TTFTMean, "another seed, another random run")
}

// The schema of results.json, field by field.
func TestResultsJSONSchema(t *testing.T) {
	cfg := smallConfig(smallTrace(2, 60))
	cfg.Policies = []string{policy.KVRouter, policy.RoundRobin}
	res, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	dir := t.TempDir()
	files, err := WriteDir(dir, res)
	require.NoError(t, err)
	assert.Len(t, files, 5)
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	assert.Equal(t, "small", doc["trace"])
	assert.Equal(t, 4.0, doc["engines"])
	bounds := doc["bounds"].(map[string]any)
	for _, k := range []string{"infinite_hit_rate", "pooled_lru_hit_rate"} {
		assert.IsType(t, 0.0, bounds[k], k)
	}
	rows := doc["rows"].([]any)
	require.Len(t, rows, 2)
	row := rows[0].(map[string]any)
	assert.Equal(t, "kvrouter", row["policy"])
	assert.Equal(t, 0.8, row["load"])
	for _, k := range []string{"seed", "requests", "failed", "ttft_mean_s", "ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "tpot_p50_s",
		"tpot_p99_s", "e2e_p90_s", "hit_rate", "prefill_tokens", "preemptions", "load_cv", "goodput", "held"} {
		assert.IsType(t, 0.0, row[k], k)
	}
	for _, f := range []string{"ttft_p90.svg", "hit_rate.svg"} {
		svg, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		assert.True(t, bytes.HasPrefix(svg, []byte("<svg ")), f)
		assert.Contains(t, string(svg), "round_robin", f)
	}
	txt, err := os.ReadFile(filepath.Join(dir, "results.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(txt), "pooled LRU")
	md, err := os.ReadFile(filepath.Join(dir, "table.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "| kvrouter |")
	assert.Contains(t, string(md), "| load 0.8 |")
}

// A trace whose requests all share their first block (one system
// prompt): every policy serves it, the shared block is a hit, and
// kvrouter spreads the load (a first-id-as-conversation router would
// send everything to one engine).
func TestTraceSharingItsFirstBlock(t *testing.T) {
	var reqs []mooncake.Request[float64]
	for i := range 200 {
		reqs = append(reqs, mooncake.Request[float64]{
			Timestamp: float64(i * 20), InputLength: 512*3 + 7, OutputLength: 20,
			HashIDs: []uint64{0, uint64(1 + i%40), uint64(1000 + i), uint64(5000 + i)},
		})
	}
	cfg := smallConfig(Trace{Name: "shared first block", Requests: reqs})
	res, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	assert.Greater(t, res.Bounds.InfiniteHitRate, 0.25, "the shared block and the 40 second blocks are reused")
	for _, r := range res.Rows {
		assert.Zero(t, r.Failed, r.Policy)
		assert.Greater(t, r.HitRate, 0.1, r.Policy)
		if r.Policy == policy.KVRouter {
			assert.Less(t, r.LoadCV, 1.0, "kvrouter's load is spread, not all on one engine (CV 1.73)")
		}
	}
}

// Bounds by hand, blocks of 512 tokens: A = ids 1,2 (1024 tokens: one
// block may hit, the last token is computed); B = ids 1,2,3 (1500 tokens,
// two blocks may hit); C = id 4 (100 tokens). Infinite: B hits 2 blocks.
// A one-block LRU keeps only A's first block (touched last): B hits 1.
func TestBoundsByHand(t *testing.T) {
	tr := Trace{Requests: []mooncake.Request[float64]{
		{Timestamp: 0, InputLength: 1024, OutputLength: 1, HashIDs: []uint64{1, 2}},
		{Timestamp: 1, InputLength: 1500, OutputLength: 1, HashIDs: []uint64{1, 2, 3}},
		{Timestamp: 2, InputLength: 100, OutputLength: 1, HashIDs: []uint64{4}},
	}}
	b, err := ComputeBounds(tr, 512, 1)
	require.NoError(t, err)
	assert.InDelta(t, 1024.0/2624, b.InfiniteHitRate, 1e-12)
	assert.InDelta(t, 512.0/2624, b.PooledLRUHitRate, 1e-12)
	assert.Equal(t, 2624-512, b.PooledLRUMissTokens)

	// The load's work over the trace's 2 ms: the pooled cache's misses
	// plus three output tokens at a decode token's price.
	cfg := engine.DefaultConfig()
	per := DecodeTokenWork(cfg)
	work, err := OfferedWorkRate(tr.Requests, b, cfg)
	require.NoError(t, err)
	assert.InDelta(t, (2112+3*per)/0.002, work, 1e-6)
}

// An output token's price for the mocker profile by hand: a decode step at
// half KV use (-25.74/4 + 54.01/2 + 5.74 = 26.35 ms) over 256 sequences,
// against an 8,192-token prefill step (4.209989e-7 * 8192^2 + 0.01518344 *
// 8192 + 16.50142 = 169.13 ms, the profile's exact coefficients) over its
// tokens.
func TestDecodeTokenWorkByHand(t *testing.T) {
	cfg := engine.DefaultConfig()
	decode := (-25.74/4 + 54.01/2 + 5.74) / 256
	prefill := (4.209989e-7*8192*8192 + 0.01518344*8192 + 16.50142) / 8192
	assert.InDelta(t, decode/prefill, DecodeTokenWork(cfg), 1e-9)
	assert.InDelta(t, 4.98, DecodeTokenWork(cfg), 0.01)
}

func TestStatistics(t *testing.T) {
	xs := []float64{1, 2, 3, 4}
	assert.Equal(t, 2.5, percentile(xs, .5))
	assert.InDelta(t, 3.7, percentile(xs, .9), 1e-12)
	assert.Equal(t, 4.0, percentile(xs, 1))
	assert.Zero(t, percentile(nil, .5))
	m, half := meanCI([]float64{1, 3})
	assert.Equal(t, 2.0, m)
	assert.InDelta(t, 12.706, half, 1e-9, "t(1) * sd 1.414 / sqrt 2")
	assert.InDelta(t, 0, coefficientOfVariation([]float64{5, 5}), 1e-12)
	assert.InDelta(t, 1, coefficientOfVariation([]float64{0, 2}), 1e-12)
}

func TestConfigValidate(t *testing.T) {
	cfg := smallConfig(smallTrace(1, 10))
	require.NoError(t, cfg.Validate())
	cfg.Policies = []string{"nope"}
	cfg.RateScales = []float64{1}
	cfg.Engines = 0
	err := cfg.Validate()
	require.ErrorIs(t, err, ErrConfig)
	for _, want := range []string{`policy "nope"`, "not both", "engines 0"} {
		assert.ErrorContains(t, err, want)
	}
}

// The token-run cache gives exactly the uncached tokens, through
// evictions, and equal ids give equal tokens.
func TestTokenRunsCacheIsTransparent(t *testing.T) {
	c := newTokenRuns(3)
	reqs := smallTrace(4, 50).Requests
	for range 2 {
		for i := range reqs {
			assert.Equal(t, appendTokens(nil, &reqs[i]), c.appendTokens(nil, &reqs[i]))
		}
	}
	a := appendTokens(nil, &mooncake.Request[float64]{InputLength: 1024, HashIDs: []uint64{7, 8}})
	b := appendTokens(nil, &mooncake.Request[float64]{InputLength: 600, HashIDs: []uint64{7, 9}})
	assert.Equal(t, a[:512], b[:512])
	assert.NotEqual(t, a[512:600], b[512:600])
	assert.Len(t, b, 600)
}

// One request replays at a rate scale; a load needs the trace's rate.
func TestOneRequestTrace(t *testing.T) {
	cfg := smallConfig(Trace{Name: "one", Requests: []mooncake.Request[float64]{{InputLength: 700, OutputLength: 5, HashIDs: []uint64{1, 2}}}})
	_, err := Run(context.Background(), cfg)
	require.ErrorContains(t, err, "at least two requests")
	cfg.Loads, cfg.RateScales = nil, []float64{1}
	res, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	for _, r := range res.Rows {
		assert.Zero(t, r.Failed, r.Policy)
		assert.Equal(t, 1.0, r.Goodput, r.Policy)
	}
}

// With several seeds the README table gives TTFT p90's interval.
func TestMarkdownIntervals(t *testing.T) {
	res := Results{Trace: "t", Engines: 1, Setup: Setup{Seeds: 3, SLOTTFTS: 2, SLOTPOTS: .05},
		Rows:    []Row{{Policy: "p", Load: 0.5}},
		Summary: []Cell{{Policy: "p", Load: 0.5, Seeds: 3, Mean: map[string]float64{"ttft_p90_s": 1.5, "hit_rate": .5, "goodput": .9}, CI95: map[string]float64{"ttft_p90_s": 0.25}}}}
	var b bytes.Buffer
	require.NoError(t, WriteMarkdown(&b, res))
	assert.Contains(t, b.String(), "| p | 1.50 ± 0.250 / 0.50 / 0.90 |")
	assert.Contains(t, b.String(), "± the 95 % interval's half-width")
}
