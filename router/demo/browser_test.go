package demo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/demo"
	"github.com/kvhash/kvhash/router/proxy"
)

// findChromium returns a Chromium to drive, or "" (mk/90-demo.mk installs
// Debian's chromium when it runs as root and finds none).
func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// pageState is what the dashboard shows, read from the DOM.
type pageState struct {
	Workers [][]string `json:"workers"` // the worker table's cells
	Lines   []string   `json:"lines"`   // the chart's lines (data-policy)
	Points  []int      `json:"points"`  // each line's points
	// The headline's route p99 card: its label and value.
	P99Label string `json:"p99Label"`
	P99      string `json:"p99"`
}

const readPage = `(() => ({
  workers: [...document.querySelectorAll("#workers tbody tr")].map(tr => [...tr.cells].map(td => td.textContent)),
  lines: [...document.querySelectorAll("#chart path.line")].map(p => p.dataset.policy),
  points: [...document.querySelectorAll("#chart path.line")].map(p => +p.dataset.points),
  p99Label: document.querySelector("#p99-label").textContent,
  p99: document.querySelector("#p99").textContent,
}))()`

// The dashboard, loaded in headless Chromium (quality 100: a PNG) against a running demo,
// fills its worker table and its chart with the demo's own numbers.
func TestDashboardInBrowser(t *testing.T) {
	skipSlow(t)
	chrome := findChromium()
	if chrome == "" {
		t.Skip("no Chromium on PATH (mk/90-demo.mk installs Debian's chromium when run as root)")
	}
	var out bytes.Buffer
	o := testOptions(t, &out, 150, 20, proxy.PolicyKV, proxy.PolicyRoundRobin)
	var page pageState
	var shot []byte
	var dash proxy.Dashboard
	o.Hold = func(r *demo.Router) {
		actx, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1200, 1000))...)
		defer cancel()
		ctx, cancel := chromedp.NewContext(actx)
		defer cancel()
		ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		require.NoError(t, chromedp.Do(ctx,
			chromedp.Navigate(r.URL+"/"),
			chromedp.WaitVisible(`body[data-loaded="1"]`),
			chromedp.WaitVisible(`#chart path.line`),
			// A second poll, so the page and the snapshot below agree.
			chromedp.Sleep(1200*time.Millisecond),
		))
		var err error
		page, err = chromedp.Run(ctx, chromedp.Evaluate[pageState](readPage))
		require.NoError(t, err)
		shot, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		resp, err := http.Get(r.URL + "/v1/dashboard")
		require.NoError(t, err)
		defer resp.Body.Close()
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&dash))
	}
	_, err := demo.Run(context.Background(), o)
	require.NoError(t, err, out.String())

	require.NotEmpty(t, shot)
	root := filepath.Join("..", "..", "build")
	require.NoError(t, os.MkdirAll(root, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "dashboard.png"), shot, 0o644))

	// The worker table: the last fleet (workers 201..204), with the
	// blocks the index holds for each.
	require.Len(t, page.Workers, len(dash.Workers))
	require.Len(t, page.Workers, 4)
	for i, w := range dash.Workers {
		row := page.Workers[i]
		assert.Equal(t, strconv.FormatUint(w.WorkerID, 10), row[0])
		assert.Equal(t, w.State, row[1])
		assert.Equal(t, strconv.FormatUint(w.Blocks, 10), row[3])
		assert.NotEqual(t, "0", row[3], "worker %d holds blocks after the replay", w.WorkerID)
		// kvmock names blocks as vLLM's sha256_cbor with its default seed.
		assert.Equal(t, w.EngineHash, row[8])
		assert.Equal(t, `verified (vllm-sha256-cbor, seed vllm-none-hash)`, row[8])
	}
	// The headline: kvrouter's own route p99 (the round-robin baseline's
	// routes are in the policy table), as the snapshot has it.
	assert.Equal(t, "route p99 · kvrouter", page.P99Label)
	assert.Equal(t, proxy.PolicyKV, dash.RoutePolicy)
	assert.InDelta(t, dash.RouteP99Us, shownMicros(t, page.P99), 50, "the card shows %q", page.P99)
	// The chart: one line per policy run, each with points.
	assert.Equal(t, []string{"kvrouter", "round_robin"}, page.Lines)
	for i, n := range page.Points {
		assert.Greater(t, n, 1, page.Lines[i])
	}
}

// shownMicros reads a latency as the dashboard writes it ("850 µs",
// "1.2 ms") back in microseconds.
func shownMicros(t *testing.T, s string) float64 {
	t.Helper()
	num, unit, ok := strings.Cut(s, " ")
	require.True(t, ok, "a latency with its unit: %q", s)
	v, err := strconv.ParseFloat(num, 64)
	require.NoError(t, err, s)
	switch unit {
	case "µs":
		return v
	case "ms":
		return v * 1000
	}
	t.Fatalf("unit of %q", s)
	return 0
}
