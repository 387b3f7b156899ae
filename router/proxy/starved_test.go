package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/demo"
	"github.com/kvhash/kvhash/router/ingest"
	"github.com/kvhash/kvhash/router/serve"
)

// slowHandler is a starved router: every batch waits before the indexer
// sees it (a consumer slower than the engine publishes).
type slowHandler struct {
	ingest.Handler
	delay time.Duration
}

func (h slowHandler) HandleBatch(src ingest.Source, b *ingest.Batch) {
	time.Sleep(h.delay)
	h.Handler.HandleBatch(src, b)
}

// A deterministic engine is never quarantined, however starved the
// router: what it published before the subscription is caught up from
// its replay endpoint, what a slow consumer falls behind on waits in the
// queue and the socket, and the index ends as the engine's cache is.
func TestStarvedRouterQuarantinesNothingDeterministic(t *testing.T) {
	cfg := engineConfig()
	cfg.NumBlocks = 96 // evictions: removes of blocks stored long before
	cfg.DecodeMsPerToken = 0.1
	eng, err := demo.InprocLauncher{}.Start(context.Background(), "e", cfg, demo.Addrs{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = eng.Stop() })
	complete := func(base string, prompt []int) {
		body := fmt.Sprintf(`{"model":"m","prompt":%s,"max_tokens":2}`, jsonInts(prompt))
		resp, err := http.Post(base+"/v1/completions", "application/json", stringsReader(body))
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	// The engine serves before any router subscribes: its PUB drops these.
	for s := range 6 {
		complete(eng.Addrs().BaseURL(), tokens(1000*s, 40))
	}

	rcfg := demo.RouterConfig("127.0.0.1:0", cfg.BlockSize)
	srv, err := serve.New(serve.Options{Config: rcfg, Logger: slog.New(slog.DiscardHandler),
		NewIngest: func(h ingest.Handler, l *slog.Logger) (serve.Ingest, error) {
			return ingest.New(ingest.Options{Handler: slowHandler{h, 3 * time.Millisecond}, Logger: l, QueueLen: 4})
		}})
	require.NoError(t, err)
	require.NoError(t, srv.Start())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close(); _ = srv.Shutdown(context.Background()) })
	f := &fleet{t: t, router: &demo.Router{Server: srv, URL: "http://" + ln.Addr().String(), AdminToken: rcfg.Security.AdminToken}, cfg: cfg}
	f.register(1, eng.Addrs())

	// Sessions whose turns extend their earlier ones, eight at a time:
	// stores, hits and evictions, faster than the router consumes them.
	var wg sync.WaitGroup
	for s := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for turn := range 10 {
				complete(f.router.URL, tokens(1000*(s%6), 24+8*turn))
			}
		}()
	}
	wg.Wait()
	rank := func() (seq uint64, violations, quarantines uint64, state string) {
		info, ok := srv.Indexer().Worker(1)
		require.True(t, ok)
		require.Len(t, info.Ranks, 1)
		r := info.Ranks[0]
		for _, n := range r.Violations {
			violations += n
		}
		return r.LastSeq, violations, r.Quarantines, r.State.String()
	}
	// Settled: the router has consumed every batch (its last seq stays).
	var last uint64
	require.Eventually(t, func() bool {
		seq, _, _, _ := rank()
		same := seq == last && seq > 0
		last = seq
		return same
	}, eventually, 300*time.Millisecond)
	_, violations, quarantines, state := rank()
	assert.Zero(t, violations, "no violation from a deterministic engine")
	assert.Zero(t, quarantines)
	assert.Equal(t, "live", state)
}

func jsonInts(v []int) string { return string(must(json.Marshal(v))) }

func stringsReader(s string) io.Reader { return strings.NewReader(s) }
