package epp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/indexer"
)

// TestEnvoy runs Envoy 1.40 -> kvrouter's picker -> kvmock engines on
// loopback, one deployment for every case (Envoy's start is the slow
// part).
func TestEnvoy(t *testing.T) {
	g := startGateway(t)
	routed := []string{"orig_duplex", "orig_buffered", "pool_duplex", "pool_buffered"}

	t.Run("requests land on the engine picked, every prompt shape", func(t *testing.T) {
		g.t = t
		for i, name := range routed {
			for _, c := range []struct {
				shape, path string
				body        map[string]any
			}{
				{"token ids", "/v1/completions", map[string]any{"model": model, "prompt": prompt(i, 40), "max_tokens": 2}},
				{"text", "/v1/completions", map[string]any{"model": model, "prompt": fmt.Sprintf("hello gateway %d", i), "max_tokens": 2}},
				{"chat", "/v1/chat/completions", map[string]any{"model": model, "max_tokens": 2,
					"messages": []map[string]string{{"role": "user", "content": fmt.Sprintf("hi %d", i)}}}},
			} {
				a := g.post(name, c.path, c.body, nil)
				require.Equal(t, http.StatusOK, a.status, "%s %s: %s", name, c.shape, a.body)
				assert.Contains(t, g.engineAddrs(), a.engine, "%s %s", name, c.shape)
				assert.Equal(t, a.endpoint, a.engine, "%s %s: the engine that answered is the pick", name, c.shape)
			}
		}
		require.Eventually(t, func() bool { return g.active() == 0 }, 5*time.Second, 10*time.Millisecond, "load released at each end of stream")
	})

	t.Run("a request without a body goes to a registered engine, carrying no load", func(t *testing.T) {
		g.t = t
		for _, name := range routed {
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/v1/models", g.ports[name]))
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode, name)
			assert.Contains(t, g.engineAddrs(), resp.Header.Get("X-Test-Engine"), name)
			assert.Equal(t, 0, g.active(), name)
		}
	})

	t.Run("a client's destination header is overwritten", func(t *testing.T) {
		g.t = t
		stranger := g.stranger.Listener.Addr().String()
		for _, name := range routed {
			a := g.post(name, "/v1/completions", map[string]any{"model": model, "prompt": prompt(50, 20), "max_tokens": 1},
				map[string]string{"x-gateway-destination-endpoint": stranger})
			require.Equal(t, http.StatusOK, a.status, "%s: %s", name, a.body)
			assert.Equal(t, a.endpoint, a.engine, name)
			assert.Contains(t, g.engineAddrs(), a.engine, name)
		}
		assert.Zero(t, g.strangerHits.Load(), "nothing reached the address the client named")
	})

	t.Run("a cached prefix brings the prompt back to its engine", func(t *testing.T) {
		g.t = t
		for i, name := range []string{"orig_duplex", "pool_buffered"} {
			p := prompt(100+i, 20*blockSize)
			first := g.post(name, "/v1/completions", map[string]any{"model": model, "prompt": p, "max_tokens": 1}, nil)
			require.Equal(t, http.StatusOK, first.status, "%s: %s", name, first.body)
			// The engine's KV events reach the router within milliseconds:
			// wait for them (asking the router, not sending the prompt
			// again, which would cache it on a second engine meanwhile).
			// Wait too for the first request's load to end: Envoy tells
			// the picker of its end after the client has the answer, and
			// a busy engine may rightly lose a 20-block prompt to an idle
			// one on predicted TTFT.
			require.Eventually(t, func() bool { return g.active() == 0 && g.cachedOn(p, 19) == first.engine }, 5*time.Second, 10*time.Millisecond,
				"%s: the router sees the first request's blocks and its end", name)
			again := g.post(name, "/v1/completions", map[string]any{"model": model, "prompt": p, "max_tokens": 1}, nil)
			require.Equal(t, http.StatusOK, again.status, "%s: %s", name, again.body)
			assert.GreaterOrEqual(t, again.overlap, 19, name)
			assert.Equal(t, first.engine, again.engine, name)
		}
	})

	t.Run("a replayed trace's hit rate through the gateway is the proxy's", func(t *testing.T) {
		g.t = t
		testHitRateParity(t, g)
	})

	t.Run("the subset hint is honoured", func(t *testing.T) {
		g.t = t
		for _, name := range routed {
			for k, e := range g.engines {
				a := g.post(name, "/v1/completions", map[string]any{"model": model, "prompt": prompt(200+k, 30), "max_tokens": 1},
					map[string]string{"x-test-subset": e.addr})
				require.Equal(t, http.StatusOK, a.status, "%s: %s", name, a.body)
				assert.Equal(t, e.addr, a.engine, name)
			}
			a := g.post(name, "/v1/completions", map[string]any{"model": model, "prompt": prompt(300, 30), "max_tokens": 1},
				map[string]string{"x-test-subset": "127.0.0.1:1"})
			assert.Equal(t, http.StatusServiceUnavailable, a.status, "%s: a subset with no registered endpoint: %s", name, a.body)
		}
	})

	t.Run("streams: prefill at the first chunk, freed at the end or on reset", func(t *testing.T) {
		g.t = t
		for _, name := range []string{"pool_duplex", "orig_buffered"} {
			// A whole stream: in flight while it runs, freed at its end.
			resp, cancel := g.stream(name, prompt(400, 64), 40)
			rd := bufio.NewReader(resp.Body)
			_, err := rd.ReadString('\n')
			require.NoError(t, err)
			assert.Equal(t, resp.Header.Get("X-Test-Engine"), resp.Header.Get("x-kvrouter-endpoint"), name)
			require.Eventually(t, func() bool {
				st := g.srv.Router().Stats()
				return st.ActiveRequests == 1 && len(st.Workers) == 1 && st.Workers[0].PrefillTokens == 0
			}, 5*time.Second, 5*time.Millisecond, "%s: one request in flight, its prefill done", name)
			rest, err := io.ReadAll(rd)
			require.NoError(t, err)
			assert.Contains(t, string(rest), "[DONE]", name)
			resp.Body.Close()
			cancel()
			require.Eventually(t, func() bool { return g.active() == 0 }, 5*time.Second, 5*time.Millisecond, "%s: freed at the end of stream", name)

			// A stream the client resets halfway: freed too.
			resp, cancel = g.stream(name, prompt(401, 64), 200)
			_, err = bufio.NewReader(resp.Body).ReadString('\n')
			require.NoError(t, err)
			require.Equal(t, 1, g.active(), name)
			cancel()
			resp.Body.Close()
			require.Eventually(t, func() bool { return g.active() == 0 }, 5*time.Second, 5*time.Millisecond, "%s: freed on reset", name)
		}
	})

	t.Run("TLS with ALPN h2 and gRPC health", func(t *testing.T) {
		g.t = t
		a := g.post("pool_tls", "/v1/completions", map[string]any{"model": model, "prompt": prompt(500, 20), "max_tokens": 1}, nil)
		require.Equal(t, http.StatusOK, a.status, "%s", a.body)
		assert.Equal(t, a.endpoint, a.engine)
		want := fmt.Sprintf("picker_tls::127.0.0.1:%d::health_flags::healthy", g.tlsPort)
		require.Eventually(t, func() bool { return strings.Contains(g.admin("/clusters"), want) }, 5*time.Second, 50*time.Millisecond,
			"Envoy's gRPC health check of the TLS picker passes")
	})

	t.Run("the picker down: what each design does", func(t *testing.T) {
		g.t = t
		body := map[string]any{"model": model, "prompt": prompt(600, 20), "max_tokens": 1}
		// FULL_DUPLEX with a body: a 500 even failing open (Envoy fails
		// open only before the first body chunk is handed over).
		for _, name := range []string{"down_orig_duplex_open", "down_pool_duplex_open"} {
			assert.Equal(t, http.StatusInternalServerError, g.post(name, "/v1/completions", body, nil).status, name)
		}
		// Failing closed: a 500.
		assert.Equal(t, http.StatusInternalServerError, g.post("down_pool_buffered_closed", "/v1/completions", body, nil).status)
		// The pool, BUFFERED, failing open: served by round robin.
		served := map[string]bool{}
		for range 3 {
			a := g.post("down_pool_buffered_open", "/v1/completions", body, nil)
			require.Equal(t, http.StatusOK, a.status, "%s", a.body)
			served[a.engine] = true
		}
		assert.Len(t, served, 3, "round robin over the pool")
		// ORIGINAL_DST failing open: no header, no upstream; a client's
		// header is obeyed wherever it points.
		assert.Equal(t, http.StatusServiceUnavailable, g.post("down_orig_buffered_open", "/v1/completions", body, nil).status)
		before := g.strangerHits.Load()
		a := g.post("down_orig_buffered_open", "/v1/completions", body,
			map[string]string{"x-gateway-destination-endpoint": g.stranger.Listener.Addr().String()})
		assert.Empty(t, a.engine, "no engine answered: %d %s", a.status, a.body)
		assert.Equal(t, http.StatusOK, a.status, "%s", a.body)
		assert.Equal(t, before+1, g.strangerHits.Load(), "the request reached whatever the client named")
	})
}

// stream starts a streamed completion through listener name.
func (g *gateway) stream(name string, p []int, maxTokens int) (*http.Response, context.CancelFunc) {
	g.t.Helper()
	b, err := json.Marshal(map[string]any{"model": model, "prompt": p, "max_tokens": maxTokens, "stream": true, "ignore_eos": true})
	require.NoError(g.t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/v1/completions", g.ports[name]), strings.NewReader(string(b)))
	require.NoError(g.t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(g.t, err)
	require.Equal(g.t, http.StatusOK, resp.StatusCode)
	return resp, cancel
}

// cachedOn is the engine whose rank the router sees holding at least
// blocks of p's blocks ("" if none), as the router's index has it.
func (g *gateway) cachedOn(p []int, blocks uint32) string {
	toks := make([]uint32, len(p))
	for i, v := range p {
		toks[i] = uint32(v)
	}
	// The index, not a route: a route counts in its rank's rate of
	// requests, which the flood guard reads, so polling by routing would
	// push the warm engine over the guard and the prompt elsewhere.
	ix := g.srv.Indexer()
	local, err := ix.AppendPromptHashes(nil, toks, indexer.PromptOptions{})
	require.NoError(g.t, err)
	overlaps, err := ix.AppendOverlaps(nil, indexer.ModelKey{Model: model}, local, false)
	require.NoError(g.t, err)
	for _, o := range overlaps {
		if o.Blocks >= blocks {
			return g.engines[o.Worker.ID-1].addr
		}
	}
	return ""
}

// admin reads a page of Envoy's admin interface.
func (g *gateway) admin(path string) string {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", g.adminPort, path))
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
