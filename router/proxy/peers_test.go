package proxy_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/config"
	"github.com/kvhash/kvhash/router/proxy"
	"github.com/kvhash/kvhash/router/route/policy"
)

// Every peer policy is selectable by name with the policy header: the
// answer is the engine's, the header names the policy, the load is freed
// at the end, and the cache-aware ones send a repeated prompt back to the
// worker that served it.
func TestPeerPoliciesSelectable(t *testing.T) {
	f := startFleet(t, 3, engineConfig())
	for _, name := range []string{policy.Dynamo, policy.LLMD, policy.LLMDPrecise, policy.SGLang, policy.LeastLoaded} {
		t.Run(name, func(t *testing.T) {
			prompt := tokens(int(len(name))*1000, 64)
			var workers []string
			for range 2 {
				resp := f.post(context.Background(), "/v1/completions", map[string]any{"model": "m", "prompt": prompt, "max_tokens": 2},
					map[string]string{proxy.PolicyHeader: name})
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				require.Equal(t, http.StatusOK, resp.StatusCode)
				assert.Equal(t, name, resp.Header.Get(proxy.HeaderPolicy))
				workers = append(workers, resp.Header.Get(proxy.HeaderWorker))
				// Let the engine's KV events reach the index (the precise
				// profile and dynamo read them).
				time.Sleep(50 * time.Millisecond)
			}
			if name == policy.SGLang || name == policy.LLMD || name == policy.Dynamo {
				assert.Equal(t, workers[0], workers[1], "the repeated prompt goes where it is cached")
			}
			require.Eventually(t, func() bool { return len(f.router.Server.Proxy().Inflight()) == 0 }, eventually, 10*time.Millisecond)
		})
	}
}

// The config's routing.policy is the policy of requests that name none.
func TestConfiguredDefaultPolicy(t *testing.T) {
	f := startFleetWith(t, 2, engineConfig(), func(c *config.Config) { c.Routing.Policy = policy.SGLang })
	resp := f.post(context.Background(), "/v1/completions", map[string]any{"model": "m", "prompt": tokens(0, 16), "max_tokens": 1}, nil)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, policy.SGLang, resp.Header.Get(proxy.HeaderPolicy))
}

func TestParsePolicyAcceptsEveryRegisteredName(t *testing.T) {
	for _, n := range policy.Names() {
		p, err := proxy.ParsePolicy(n)
		require.NoError(t, err, n)
		assert.Equal(t, proxy.Policy(n), p)
	}
	p, err := proxy.ParsePolicy("kv")
	require.NoError(t, err)
	assert.Equal(t, proxy.PolicyKV, p)
	_, err = proxy.ParsePolicy("nope")
	require.ErrorContains(t, err, "llmd-precise")
}
