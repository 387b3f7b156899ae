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
		resp, err := http.Post(f.router.URL+"/v1/workers", "application/json", bytes.NewReader(body))
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
