package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	mooncaketrace "github.com/kvhash/kvhash/data/mooncake"
	"github.com/kvhash/kvhash/router/route/policy"
)

// TestAgreesWithDynoSim replays the vendored Mooncake trace at its own
// rate in Dynamo's simulator (the ai-dynamo-runtime wheel in build/venv)
// and here, with the mocker's profile and defaults on 8 engines. Round
// robin, where routing cannot differ, must agree closely: the engine
// model and its timing are the mocker's. Dynamo's kv_router and the dynamo
// policy (the same cost, two implementations whose tie-breaks differ)
// within a looser bound. Without the venv the test skips, unless
// KVHASH_REQUIRE_VENV=1 (make sim-dynamo) makes that a failure.
func TestAgreesWithDynoSim(t *testing.T) {
	if raceDetector {
		t.Skip("a whole-trace replay under the race detector: make sim-dynamo runs it without")
	}
	py, err := filepath.Abs("../../build/venv/bin/python")
	require.NoError(t, err)
	if _, err := os.Stat(py); err != nil {
		skipOrFail(t, "no Python venv at %s (make venv builds it): %v", py, err)
	}
	if err := exec.Command(py, "-c", "import dynamo._core").Run(); err != nil {
		skipOrFail(t, "the venv has no Dynamo wheel (ai-dynamo-runtime): %v", err)
	}
	trace := filepath.Join(t.TempDir(), "synthetic.jsonl")
	require.NoError(t, os.WriteFile(trace, mooncaketrace.Synthetic(), 0o600))
	out, err := exec.Command(py, "testdata/dynosim_replay.py", trace, "1", "round_robin,kv_router").Output()
	require.NoError(t, err, "dynosim_replay.py")
	type summary struct {
		Mode       string  `json:"mode"`
		Reuse      float64 `json:"reuse"`
		MeanTTFTms float64 `json:"mean_ttft_ms"`
		P90TTFTms  float64 `json:"p90_ttft_ms"`
	}
	dyn := map[string]summary{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var s summary
		require.NoError(t, json.Unmarshal(sc.Bytes(), &s), sc.Text())
		dyn[s.Mode] = s
	}
	require.Len(t, dyn, 2)

	reqs, err := mooncaketrace.Requests()
	require.NoError(t, err)
	cfg := DefaultConfig()
	cfg.Trace = Trace{Name: "synthetic", Requests: reqs}
	cfg.Loads, cfg.RateScales = nil, []float64{1}
	cfg.Policies = []string{policy.RoundRobin, policy.Dynamo}
	res, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	ours := map[string]Row{}
	for _, r := range res.Rows {
		ours[r.Policy] = r
	}
	for _, tc := range []struct {
		dynamo, ours     string
		reuse, ttftShare float64
	}{
		{"round_robin", policy.RoundRobin, 0.005, 0.02},
		{"kv_router", policy.Dynamo, 0.03, 0.10},
	} {
		d, o := dyn[tc.dynamo], ours[tc.ours]
		t.Logf("%s: reuse %.3f / %.3f, TTFT mean %.0f / %.0f ms, p90 %.0f / %.0f ms (DynoSim / sim)",
			tc.ours, d.Reuse, o.HitRate, d.MeanTTFTms, o.TTFTMean*1000, d.P90TTFTms, o.TTFTP90*1000)
		assert.InDelta(t, d.Reuse, o.HitRate, tc.reuse, tc.ours)
		assert.InEpsilon(t, d.MeanTTFTms, o.TTFTMean*1000, tc.ttftShare, tc.ours)
		assert.InEpsilon(t, d.P90TTFTms, o.TTFTP90*1000, tc.ttftShare, tc.ours)
	}
}
