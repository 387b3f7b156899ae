package proxy_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/proxy"
	"github.com/kvhash/kvhash/router/route"
)

// newProxy is a proxy over a fresh indexer and router, with one worker
// (no event stream) at baseURL.
func newProxy(t *testing.T, baseURL string, opts proxy.Options) (*httptest.Server, *route.Router) {
	t.Helper()
	srv, rt, _ := newProxyWith(t, baseURL, opts)
	return srv, rt
}

// newProxyWith is newProxy that also returns the proxy.
func newProxyWith(t *testing.T, baseURL string, opts proxy.Options) (*httptest.Server, *route.Router, *proxy.Proxy) {
	t.Helper()
	ix, err := indexer.New(indexer.Options{BlockSize: 4})
	require.NoError(t, err)
	_, err = ix.AddWorker(indexer.WorkerSpec{WorkerID: 1, Model: "m", BaseURL: baseURL})
	require.NoError(t, err)
	rt, err := route.New(ix, route.Options{})
	require.NoError(t, err)
	opts.Indexer, opts.Router, opts.HealthInterval = ix, rt, -1
	px, err := proxy.New(opts)
	require.NoError(t, err)
	srv := httptest.NewServer(px.Wrap(http.NotFoundHandler()))
	t.Cleanup(srv.Close)
	return srv, rt, px
}

// An engine that sends no headers within the header timeout is a 504;
// the request's load is freed.
func TestEngineTimeout(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	srv, rt := newProxy(t, slow.URL, proxy.Options{HeaderTimeout: 200 * time.Millisecond})
	resp, err := http.Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"m","prompt":[1,2,3,4,5]}`))
	require.NoError(t, err)
	assert.Equal(t, http.StatusGatewayTimeout, resp.StatusCode)
	assert.Equal(t, "engine_timeout", errorCode(t, resp))
	assert.Equal(t, 0, rt.Stats().ActiveRequests)
}

// An engine's own error answer reaches the client as the engine sent it.
func TestEngineErrorPassedThrough(t *testing.T) {
	f := startFleet(t, 1, engineConfig())
	resp := f.post(context.Background(), "/v1/completions", map[string]any{"model": "m", "prompt": tokens(0, 8), "max_tokens": 1 << 20}, nil)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "max_tokens beyond the engine's max-model-len")
	defer resp.Body.Close()
	assert.Equal(t, "1", resp.Header.Get(proxy.HeaderWorker))
	f.waitSettled() // the failure is counted before the load is freed
	ps := f.router.Server.Proxy().Stats().Snapshot().Policies
	require.Len(t, ps, 1)
	assert.Equal(t, uint64(1), ps[0].Failed)
}
