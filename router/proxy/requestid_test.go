package proxy_test

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A client of /v1/route may name its requests anything, the names the
// router makes up too: a proxied request still gets a name of its own.
func TestProxiedRequestIDsDoNotCollideWithClients(t *testing.T) {
	f := startFleet(t, 1, engineConfig())
	for _, id := range []string{"kvp-1", "kvp-2", "kvp-3", "kvr-1", "kvr-2", "kvr-3"} {
		resp := f.post(context.Background(), "/v1/route", map[string]any{"model": "m", "token_ids": tokens(0, 8), "request_id": id}, nil)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, id)
	}
	for i := range 4 {
		resp := f.post(context.Background(), "/v1/completions", map[string]any{"model": "m", "prompt": tokens(i, 16), "max_tokens": 1}, nil)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, "request %d: %s", i, body)
	}
}
