package proxy_test

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/proxy"
	"github.com/kvhash/kvhash/router/route"
)

// A stream the proxy forwards counts as load until it ends, however long
// past the request TTL it runs: only requests nobody frees expire.
func TestProxiedStreamOutlivesRequestTTL(t *testing.T) {
	release := make(chan struct{})
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {\"choices\":[{\"text\":\"a\"}]}\n\n"))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
		_, _ = w.Write([]byte("data: [DONE]\n\n"))
	}))
	defer engine.Close()
	var mu sync.Mutex
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	ix, err := indexer.New(indexer.Options{BlockSize: 4})
	require.NoError(t, err)
	_, err = ix.AddWorker(indexer.WorkerSpec{WorkerID: 1, Model: "m", BaseURL: engine.URL})
	require.NoError(t, err)
	rt, err := route.New(ix, route.Options{RequestTTL: time.Minute, Now: clock})
	require.NoError(t, err)
	px, err := proxy.New(proxy.Options{Indexer: ix, Router: rt, HealthInterval: -1})
	require.NoError(t, err)
	srv := httptest.NewServer(px.Wrap(http.NotFoundHandler()))
	defer srv.Close()

	resp, err := http.Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"m","prompt":[1,2,3,4,5],"stream":true}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	first, err := bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(first, "data: "), first)

	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	assert.Zero(t, rt.Expire(), "the open stream is not expired")
	assert.Equal(t, 1, rt.Stats().ActiveRequests)
	close(release)
	require.Eventually(t, func() bool { return rt.Stats().ActiveRequests == 0 }, eventually, 5*time.Millisecond, "freed when the stream ends")
}
