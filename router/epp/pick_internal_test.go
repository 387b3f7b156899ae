package epp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/internal/httpapi"
	"github.com/kvhash/kvhash/router/route"
)

// newFleetPicker is a picker over an indexer with ranks workers of model
// "m", each at its own loopback address.
func newFleetPicker(tb testing.TB, ranks int) *Server {
	tb.Helper()
	ix, err := indexer.New(indexer.Options{BlockSize: 16})
	require.NoError(tb, err)
	for i := range ranks {
		_, err := ix.AddWorker(indexer.WorkerSpec{WorkerID: uint64(i + 1), Model: "m", BaseURL: fmt.Sprintf("http://127.0.0.1:%d", 20000+i)})
		require.NoError(tb, err)
	}
	rt, err := route.New(ix, route.Options{Seed: 1})
	require.NoError(tb, err)
	s, err := New(Options{Indexer: ix, Router: rt})
	require.NoError(tb, err)
	return s
}

// BenchmarkPick is the pick alone at 128 workers: the body read, the
// eligibility filter, the router's cost over every rank, the load
// recorded and freed. It reports the p99 per pick.
func BenchmarkPick(b *testing.B) {
	s := newFleetPicker(b, 128)
	toks := make([]byte, 0, 4096)
	toks = append(toks, `{"model":"m","prompt":[`...)
	for i := range 512 {
		if i > 0 {
			toks = append(toks, ',')
		}
		toks = fmt.Appendf(toks, "%d", 100+i)
	}
	toks = append(toks, "]}"...)
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		p, err := s.decide(ctx, "/v1/completions", toks, subset{})
		lat = append(lat, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
		s.opts.Router.Free(p.RequestID)
		s.flights.add(p.Worker, -1)
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-us")
}

// FuzzExchange feeds any path, body and subset hint to the pick: it never
// panics, refuses with an OpenAI error and a 4xx/5xx status, or names a
// registered endpoint inside the subset.
func FuzzExchange(f *testing.F) {
	f.Add("/v1/completions", []byte(`{"model":"m","prompt":[1,2,3]}`), "")
	f.Add("/v1/chat/completions", []byte(`{"model":"m","messages":[{"role":"user","content":"x"}]}`), "127.0.0.1:20001")
	f.Add("/v1/completions?q", []byte(`{"model":"m","prompt":"text"}`), ",")
	f.Add("/v1/models", []byte(nil), "127.0.0.1:20000,127.0.0.1:1")
	f.Add("/v1/completions", []byte(`{"model":"x","prompt":[[1]]}`), "")
	s := newFleetPicker(f, 3)
	f.Fuzz(func(t *testing.T, path string, body []byte, hint string) {
		sub := subset{}
		if hint != "" {
			sub = readSubsetString(hint)
		}
		p, err := s.decide(context.Background(), path, body, sub)
		if err != nil {
			var ae *httpapi.Error
			require.True(t, errors.As(err, &ae), "%v", err)
			require.GreaterOrEqual(t, ae.Status, 400)
			return
		}
		_, registered := s.eps.worker(p.Endpoint)
		require.True(t, registered, "picked %q", p.Endpoint)
		require.True(t, sub.allows(p.Endpoint))
		if p.RequestID != "" {
			require.True(t, s.opts.Router.Free(p.RequestID))
			s.flights.add(p.Worker, -1)
		}
	})
}
