package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/config"
	"github.com/kvhash/kvhash/router/demo"
)

// fleet is kvrouter (in process, ZeroMQ ingest included) and kvmock
// engines (in process, real loopback sockets), registered as workers
// 1..n of model "m".
type fleet struct {
	t       *testing.T
	router  *demo.Router
	cfg     demo.EngineConfig
	engines []demo.Engine
}

func engineConfig() demo.EngineConfig {
	return demo.EngineConfig{Model: "m", BlockSize: 4, NumBlocks: 4096, MaxRunning: 8,
		PrefillTokensPerSec: 1e6, DecodeMsPerToken: 1, Speedup: 1, MaxModelLen: 65536}
}

func startFleet(t *testing.T, n int, cfg demo.EngineConfig) *fleet {
	t.Helper()
	return startFleetWith(t, n, cfg, nil)
}

// startFleetWith is startFleet with kvrouter's config edited first.
func startFleetWith(t *testing.T, n int, cfg demo.EngineConfig, edit func(*config.Config)) *fleet {
	t.Helper()
	rcfg := demo.RouterConfig("127.0.0.1:0", cfg.BlockSize)
	if edit != nil {
		edit(&rcfg)
	}
	r, err := demo.StartRouter(rcfg, nil)
	require.NoError(t, err)
	f := &fleet{t: t, router: r, cfg: cfg}
	t.Cleanup(func() {
		for _, e := range f.engines {
			if e != nil {
				_ = e.Stop()
			}
		}
		_ = r.Stop()
	})
	for i := range n {
		e, err := demo.InprocLauncher{}.Start(context.Background(), "e", cfg, demo.Addrs{})
		require.NoError(t, err)
		f.engines = append(f.engines, e)
		f.register(uint64(i+1), e.Addrs())
	}
	for i, e := range f.engines {
		f.waitSubscribed(uint64(i+1), e)
	}
	return f
}

// waitSubscribed waits until kvrouter subscribes to the engine's events:
// the engine's PUB socket drops what it sends before, and a request
// served meanwhile would leave blocks the router never hears of (until
// a later batch from that engine shows the gap).
func (f *fleet) waitSubscribed(id uint64, e demo.Engine) {
	f.t.Helper()
	s, ok := e.(interface{ Subscribed() bool })
	require.True(f.t, ok, "an in-process engine tells whether it has a subscriber")
	require.Eventually(f.t, s.Subscribed, eventually, 5*time.Millisecond, "kvrouter never subscribed to worker %d", id)
}

func (f *fleet) register(id uint64, a demo.Addrs) {
	f.t.Helper()
	body, _ := json.Marshal(map[string]any{"worker_id": id, "model": "m", "endpoint": a.Events, "replay_endpoint": a.Replay, "base_url": a.BaseURL()})
	req, err := http.NewRequestWithContext(f.t.Context(), http.MethodPost, f.router.URL+"/v1/workers", bytes.NewReader(body))
	require.NoError(f.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+f.router.AdminToken) // the demo's router has auth on
	resp, err := http.DefaultClient.Do(req)
	require.NoError(f.t, err)
	resp.Body.Close()
	require.Contains(f.t, []int{200, 201}, resp.StatusCode)
}

// post sends a JSON body to kvrouter, with extra headers.
func (f *fleet) post(ctx context.Context, path string, body any, hdr map[string]string) *http.Response {
	f.t.Helper()
	b, ok := body.([]byte)
	if !ok {
		var err error
		b, err = json.Marshal(body)
		require.NoError(f.t, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.router.URL+path, bytes.NewReader(b))
	require.NoError(f.t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(f.t, err)
	return resp
}

// workerHealthy reads GET /v1/workers/{id}'s healthy flag.
func (f *fleet) workerHealthy(id uint64) bool {
	resp, err := http.Get(f.router.URL + "/v1/workers/" + itoa(id))
	require.NoError(f.t, err)
	defer resp.Body.Close()
	var v struct {
		Healthy bool `json:"healthy"`
	}
	require.NoError(f.t, json.NewDecoder(resp.Body).Decode(&v))
	return v.Healthy
}

func itoa(n uint64) string { return strings.TrimSpace(string(must(json.Marshal(n)))) }

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// sseData returns a stream's data payloads, in order.
func sseData(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<22)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// errorCode reads an OpenAI error body's code.
func errorCode(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
	require.NotEmpty(t, e.Error.Message)
	require.NotEmpty(t, e.Error.Type)
	return e.Error.Code
}

func tokens(start, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = 300 + start + i
	}
	return out
}

// eventually caps every wait: generous, for a loaded 2-core CI machine
// running -race packages in parallel (a wait ends as soon as its
// condition holds, so it costs nothing when the machine is idle).
const eventually = 30 * time.Second

// waitSettled waits until the proxy has finished every request: their
// load is freed in the router and nothing is in flight. The client can
// read a whole answer before the handler returns (the engine's body is
// copied, then the request's figures are counted and its load freed), so
// assertions on those figures wait for this first.
func (f *fleet) waitSettled() {
	f.t.Helper()
	rt, px := f.router.Server.Router(), f.router.Server.Proxy()
	require.Eventually(f.t, func() bool {
		return rt.Stats().ActiveRequests == 0 && len(px.Inflight()) == 0
	}, eventually, 5*time.Millisecond, "the proxy never finished its requests")
}
