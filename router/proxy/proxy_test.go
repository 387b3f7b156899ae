package proxy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/demo"
	"github.com/kvhash/kvhash/router/proxy"
)

// A stream is passed through chunk by chunk: the first token reaches the
// client while the engine is still decoding, the request's prefill is
// marked done by then, and its load is freed at the end.
func TestStreamingPassthrough(t *testing.T) {
	cfg := engineConfig()
	cfg.DecodeMsPerToken = 100 // 1.1 s of decoding after the first token: room to read the stats on a loaded machine
	f := startFleet(t, 1, cfg)
	rt := f.router.Server.Router()

	resp := f.post(context.Background(), "/v1/completions", map[string]any{
		"model": "m", "prompt": tokens(0, 64), "max_tokens": 12, "stream": true,
		"stream_options": map[string]bool{"include_usage": true},
	}, nil)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get(proxy.HeaderWorker))
	assert.Equal(t, "kvrouter", resp.Header.Get(proxy.HeaderPolicy))
	assert.Contains(t, resp.Header.Get("Content-Type"), "text/event-stream")

	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(first, "data: {"), first)
	// The engine is still decoding 11 more tokens: the request is active,
	// its prefill tokens no longer count.
	st := rt.Stats()
	require.Equal(t, 1, st.ActiveRequests)
	require.Len(t, st.Workers, 1)
	assert.Zero(t, st.Workers[0].PrefillTokens, "prefill done at the first token")
	assert.NotZero(t, st.Workers[0].ActiveBlocks)

	rest := sseData(t, br)
	require.NotEmpty(t, rest)
	assert.Equal(t, "[DONE]", rest[len(rest)-1])
	var chunks int
	for _, d := range rest[:len(rest)-1] {
		var c struct {
			Choices []json.RawMessage `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(d), &c), d)
		if len(c.Choices) > 0 {
			chunks++
		}
	}
	assert.Equal(t, 11, chunks, "every token chunk after the first")
	f.waitSettled() // the usage is counted before the load is freed
	ps := f.router.Server.Proxy().Stats().Snapshot().Policies
	require.Len(t, ps, 1)
	assert.Equal(t, uint64(64), ps[0].PromptTokens, "usage read from the stream's usage chunk")
}

// A non-streaming answer is copied whole, with the engine's headers.
func TestNonStreamingPassthrough(t *testing.T) {
	f := startFleet(t, 1, engineConfig())
	resp := f.post(context.Background(), "/v1/completions", map[string]any{"model": "m", "prompt": tokens(0, 40), "max_tokens": 3}, nil)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var c struct {
		Object string `json:"object"`
		Usage  struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&c))
	assert.Equal(t, "text_completion", c.Object)
	assert.Equal(t, 40, c.Usage.PromptTokens)
	assert.Equal(t, 3, c.Usage.CompletionTokens)
	assert.Equal(t, "40", resp.Header.Get("X-Kvmock-Prompt-Tokens"), "the engine's headers pass through")
	f.waitSettled()
}

// A client that goes away mid-stream frees the request's load at once
// (the upstream request is cancelled with it).
func TestClientDisconnectFreesLoad(t *testing.T) {
	cfg := engineConfig()
	cfg.DecodeMsPerToken = 200
	f := startFleet(t, 1, cfg)
	rt := f.router.Server.Router()
	ctx, cancel := context.WithCancel(context.Background())
	resp := f.post(ctx, "/v1/completions", map[string]any{"model": "m", "prompt": tokens(0, 32), "max_tokens": 500, "stream": true}, nil)
	br := bufio.NewReader(resp.Body)
	_, err := br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, 1, rt.Stats().ActiveRequests)
	cancel()
	_ = resp.Body.Close()
	require.Eventually(t, func() bool {
		return rt.Stats().ActiveRequests == 0 && len(f.router.Server.Proxy().Inflight()) == 0
	}, eventually, 10*time.Millisecond, "500 tokens at 200 ms would take 100 s: only the disconnect frees it")
}

// An engine that goes down answers 502 and leaves the rotation; when it
// is back the health poller puts it back in.
func TestEngineDownAndBack(t *testing.T) {
	f := startFleet(t, 1, engineConfig())
	body := map[string]any{"model": "m", "prompt": tokens(0, 16), "max_tokens": 1}
	addrs := f.engines[0].Addrs()
	require.NoError(t, f.engines[0].Stop())
	f.engines[0] = nil

	resp := f.post(context.Background(), "/v1/completions", body, nil)
	assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
	assert.Equal(t, "engine_unreachable", errorCode(t, resp))
	assert.False(t, f.workerHealthy(1), "a refused connection takes it out at once")

	resp = f.post(context.Background(), "/v1/completions", body, nil)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "no_worker", errorCode(t, resp))

	e, err := demo.InprocLauncher{}.Start(context.Background(), "e", f.cfg, addrs)
	require.NoError(t, err)
	f.engines[0] = e
	require.Eventually(t, func() bool { return f.workerHealthy(1) }, eventually, 50*time.Millisecond)
	resp = f.post(context.Background(), "/v1/completions", body, nil)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// An engine whose /health fails (while it still serves) is skipped, and
// taken back once it passes.
func TestUnhealthyEngineSkipped(t *testing.T) {
	f := startFleet(t, 2, engineConfig())
	setHealth := func(healthy bool) {
		r, err := http.Post(f.engines[0].Addrs().BaseURL()+"/kvmock/health", "application/json",
			strings.NewReader(`{"healthy":`+strconv.FormatBool(healthy)+`}`))
		require.NoError(t, err)
		r.Body.Close()
	}
	setHealth(false)
	require.Eventually(t, func() bool { return !f.workerHealthy(1) }, eventually, 50*time.Millisecond)
	for i := range 8 {
		resp := f.post(context.Background(), "/v1/completions", map[string]any{"model": "m", "prompt": tokens(i*50, 16), "max_tokens": 1},
			map[string]string{proxy.PolicyHeader: "round_robin"})
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "2", resp.Header.Get(proxy.HeaderWorker))
	}
	setHealth(true)
	require.Eventually(t, func() bool { return f.workerHealthy(1) }, eventually, 50*time.Millisecond)
}

// A text prompt is tokenized by an engine's /tokenize and routed on those
// ids: once the engine's events are in, the same text matches its blocks.
func TestTextPromptTokenized(t *testing.T) {
	f := startFleet(t, 2, engineConfig())
	text := strings.Repeat("the quick brown fox jumps over the lazy dog ", 8)
	body := map[string]any{"model": "m", "prompt": text, "max_tokens": 1}
	resp := f.post(context.Background(), "/v1/completions", body, nil)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.NotEmpty(t, resp.Header.Get(proxy.HeaderTokenizeUs))
	first := resp.Header.Get(proxy.HeaderWorker)
	require.Eventually(t, func() bool {
		r := f.post(context.Background(), "/v1/completions", body, nil)
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
		n, _ := strconv.Atoi(r.Header.Get(proxy.HeaderOverlap))
		// 73 tokens with BOS: 18 full blocks of 4.
		return r.Header.Get(proxy.HeaderWorker) == first && n == 18
	}, eventually, 50*time.Millisecond)
}

// Chat messages are tokenized with the engine's chat template and routed
// on those ids; the answer is the engine's chat completion.
func TestChatTokenized(t *testing.T) {
	f := startFleet(t, 2, engineConfig())
	body := map[string]any{"model": "m", "max_tokens": 2, "messages": []map[string]string{
		{"role": "system", "content": strings.Repeat("You are a careful assistant. ", 6)},
		{"role": "user", "content": "Name three prime numbers."},
	}}
	resp := f.post(context.Background(), "/v1/chat/completions", body, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var c struct {
		Object string `json:"object"`
		Usage  struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&c))
	resp.Body.Close()
	assert.Equal(t, "chat.completion", c.Object)
	require.Positive(t, c.Usage.PromptTokens)
	first := resp.Header.Get(proxy.HeaderWorker)
	require.Eventually(t, func() bool {
		r := f.post(context.Background(), "/v1/chat/completions", body, nil)
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
		n, _ := strconv.Atoi(r.Header.Get(proxy.HeaderOverlap))
		return r.Header.Get(proxy.HeaderWorker) == first && n == c.Usage.PromptTokens/4
	}, eventually, 50*time.Millisecond, "the routed ids are the template's, as the engine hashed them")
}

// Bad requests get OpenAI errors and change nothing.
func TestBadRequests(t *testing.T) {
	f := startFleet(t, 1, engineConfig())
	cases := []struct {
		name, path string
		body       string
		hdr        map[string]string
		status     int
		code       string
	}{
		{"invalid JSON", "/v1/completions", `{"model":`, nil, 400, "invalid_json"},
		{"no model", "/v1/completions", `{"prompt":[1,2]}`, nil, 400, "missing_field"},
		{"no prompt", "/v1/completions", `{"model":"m"}`, nil, 400, "missing_field"},
		{"no messages", "/v1/chat/completions", `{"model":"m"}`, nil, 400, "missing_field"},
		{"batch", "/v1/completions", `{"model":"m","prompt":[[1,2],[3]]}`, nil, 400, "invalid_value"},
		{"negative token", "/v1/completions", `{"model":"m","prompt":[1,-2]}`, nil, 400, "invalid_value"},
		{"huge token", "/v1/completions", `{"model":"m","prompt":[4294967296]}`, nil, 400, "invalid_value"},
		{"prompt object", "/v1/completions", `{"model":"m","prompt":{}}`, nil, 400, "invalid_value"},
		{"unknown model", "/v1/completions", `{"model":"x","prompt":[1,2]}`, nil, 404, "model_not_found"},
		{"bad policy", "/v1/completions", `{"model":"m","prompt":[1]}`, map[string]string{proxy.PolicyHeader: "fastest"}, 400, "invalid_policy"},
		{"ill-typed field", "/v1/completions", `{"model":"m","prompt":"hi","add_special_tokens":"yes"}`, nil, 400, "invalid_json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := f.post(context.Background(), tc.path, []byte(tc.body), tc.hdr)
			assert.Equal(t, tc.status, resp.StatusCode)
			assert.Equal(t, tc.code, errorCode(t, resp))
		})
	}
	assert.Equal(t, 0, f.router.Server.Router().Stats().ActiveRequests)
	assert.Empty(t, f.router.Server.Proxy().Inflight())
}

// The baselines spread requests as named.
func TestRoundRobinCycles(t *testing.T) {
	f := startFleet(t, 3, engineConfig())
	var got []string
	for i := range 6 {
		resp := f.post(context.Background(), "/v1/completions", map[string]any{"model": "m", "prompt": tokens(0, 8+i), "max_tokens": 1},
			map[string]string{proxy.PolicyHeader: "round_robin"})
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got = append(got, resp.Header.Get(proxy.HeaderWorker))
	}
	assert.Equal(t, got[:3], got[3:])
	assert.ElementsMatch(t, []string{"1", "2", "3"}, got[:3])
}

// The proxy's figures are on kvrouter's /metrics.
func TestProxyMetrics(t *testing.T) {
	f := startFleet(t, 1, engineConfig())
	resp := f.post(context.Background(), "/v1/completions", map[string]any{"model": "m", "prompt": tokens(0, 12), "max_tokens": 1}, nil)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	f.waitSettled() // the prompt tokens are counted once the answer is copied
	m, err := http.Get(f.router.URL + "/metrics")
	require.NoError(t, err)
	defer m.Body.Close()
	b, err := io.ReadAll(m.Body)
	require.NoError(t, err)
	assert.Contains(t, string(b), `kvrouter_proxy_requests_total{policy="kvrouter"} 1`)
	assert.Contains(t, string(b), `kvrouter_proxy_prompt_tokens_total{policy="kvrouter"} 12`)
}
