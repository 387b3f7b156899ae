package epp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// replayTrace is a small trace with shared prefixes: groups of requests
// that share a long system prompt, interleaved, each with its own tail.
func replayTrace() [][]int {
	rng := rand.New(rand.NewPCG(7, 11))
	const groups, perGroup, prefix, tail = 6, 5, 8 * blockSize, 2 * blockSize
	var out [][]int
	for r := range perGroup {
		for g := range groups {
			p := append(prompt(1000+g, prefix), prompt(5000+g*perGroup+r, tail)...)
			out = append(out, p)
		}
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// hitRate replays the trace one request at a time at url (the proxy or
// the gateway) and returns the engines' cached share of prompt tokens, as
// their usage reports it.
func (g *gateway) hitRate(t *testing.T, url string, trace [][]int) float64 {
	t.Helper()
	var prompt, cached int
	for _, p := range trace {
		b, err := json.Marshal(map[string]any{"model": model, "prompt": p, "max_tokens": 1})
		require.NoError(t, err)
		resp, err := http.Post(url+"/v1/completions", "application/json", bytes.NewReader(b))
		require.NoError(t, err)
		var out struct {
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
				Details      struct {
					CachedTokens int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		resp.Body.Close()
		prompt += out.Usage.PromptTokens
		cached += out.Usage.Details.CachedTokens
		// The engine's KV events reach the router before the next request
		// on either path: the comparison is of routing, not of the
		// events' race with the next request.
		full := uint32(len(p) / blockSize)
		require.Eventually(t, func() bool { return g.cachedOn(p, full) != "" }, 5*time.Second, 2*time.Millisecond)
		// Nor of the answer's end with the next request: the proxy frees a
		// request's load after its client has read the answer, and a warm
		// engine still counting it is not the least loaded of near-equal
		// candidates (the predicted TTFT's spread), so the next request
		// could go cold on one path and not the other.
		require.Eventually(t, func() bool { return g.srv.Router().Stats().ActiveRequests == 0 }, 5*time.Second, time.Millisecond)
	}
	require.Positive(t, prompt)
	return float64(cached) / float64(prompt)
}

// resetCaches empties every engine's prefix cache and waits until the
// router's index has heard it.
func (g *gateway) resetCaches(t *testing.T) {
	t.Helper()
	for _, e := range g.engines {
		require.Eventually(t, func() bool {
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://"+e.addr+"/reset_prefix_cache", nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK // refused while a block is in use
		}, 5*time.Second, 20*time.Millisecond)
	}
	require.Eventually(t, func() bool {
		for _, w := range g.srv.Indexer().Workers() {
			for _, r := range w.Ranks {
				if r.Blocks > 0 {
					return false
				}
			}
		}
		return true
	}, 5*time.Second, 10*time.Millisecond, "the router's index emptied")
}

func testHitRateParity(t *testing.T, g *gateway) {
	trace := replayTrace()
	g.resetCaches(t)
	viaProxy := g.hitRate(t, g.proxyURL, trace)
	g.resetCaches(t)
	viaGateway := g.hitRate(t, fmt.Sprintf("http://127.0.0.1:%d", g.ports["pool_duplex"]), trace)
	t.Logf("hit rate: proxy %.3f, gateway %.3f", viaProxy, viaGateway)
	// Each group's prefix is a miss once and a hit after: 8 of 10 blocks
	// of 24 of 30 requests.
	assert.Greater(t, viaProxy, 0.5)
	assert.InDelta(t, viaProxy, viaGateway, 0.05, "the gateway routes as the proxy does")
}
