package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/proxy"
)

// Workers registered without a base_url serve /v1/route's clients; the
// proxy, under every policy, sends only to the workers it can reach.
func TestProxyRoutesOnlyToReachableWorkers(t *testing.T) {
	f := startFleet(t, 1, engineConfig())
	for _, id := range []uint64{10, 11, 12} {
		body, _ := json.Marshal(map[string]any{"worker_id": id, "model": "m"})
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, f.router.URL+"/v1/workers", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+f.router.AdminToken) // the demo's router has auth on
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusCreated, resp.StatusCode)
	}
	for _, pol := range proxy.Policies {
		t.Run(string(pol), func(t *testing.T) {
			for i := range 8 {
				resp := f.post(context.Background(), "/v1/completions", map[string]any{"model": "m", "prompt": tokens(100*i, 16), "max_tokens": 1},
					map[string]string{proxy.PolicyHeader: string(pol)})
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				require.Equal(t, http.StatusOK, resp.StatusCode, "request %d: %s", i, body)
				assert.Equal(t, "1", resp.Header.Get(proxy.HeaderWorker))
			}
		})
	}
}

// Another method on one of the proxy's paths is a 405 naming the allowed
// one, in OpenAI's error shape.
func TestProxyPathsWrongMethodIs405(t *testing.T) {
	srv, _ := newProxy(t, "http://127.0.0.1:1", proxy.Options{})
	for _, tc := range []struct{ method, path, allow string }{
		{http.MethodGet, "/v1/completions", "POST"},
		{http.MethodPut, "/v1/chat/completions", "POST"},
		{http.MethodPost, "/v1/dashboard", "GET"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, nil)
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
			assert.Equal(t, tc.allow, resp.Header.Get("Allow"))
			assert.Equal(t, "method_not_allowed", errorCode(t, resp))
		})
	}
}
