package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/config"
	"github.com/kvhash/kvhash/router/ingest"
	"github.com/kvhash/kvhash/router/route"
	"github.com/kvhash/kvhash/router/serve"
)

// service is a kvrouter service (router/serve) behind its HTTP API.
type service struct {
	t   *testing.T
	srv *serve.Server
	url string
}

// newService starts a service on the given clock (the simulator's
// virtual time: the predicted-TTFT router learns from the time between a
// route and its prefill_done).
func newService(t *testing.T, blockSize int, seed uint64, now func() time.Time) *service {
	cfg := config.Default()
	cfg.BlockSize = blockSize
	cfg.Routing.RequestTTL = 1000 * time.Hour
	srv, err := serve.New(serve.Options{Config: cfg, Seed: seed, Now: now})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return &service{t: t, srv: srv, url: ts.URL}
}

func (s *service) call(method, path string, body any, want int) []byte {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(s.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	require.NoError(s.t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	require.Equal(s.t, want, resp.StatusCode, "%s %s: %s", method, path, out)
	return out
}

// dynamoEvents turns an engine batch into Dynamo's JSON events (the
// HTTP publishers' form): stores carry each block's canonical local hash.
func dynamoEvents(t *testing.T, b *ingest.Batch) []any {
	var out []any
	for _, ev := range b.Events {
		switch ev.Kind {
		case ingest.BlockRemoved:
			out = append(out, map[string]any{"event_id": b.Seq, "data": map[string]any{"removed": map[string]any{"block_hashes": ev.BlockHashes}}})
		case ingest.BlockStored:
			local, err := core.BlockHashes(ev.TokenIDs, ev.BlockSize, core.Options{})
			require.NoError(t, err)
			blocks := make([]map[string]uint64, len(local))
			for i := range local {
				blocks[i] = map[string]uint64{"block_hash": ev.BlockHashes[i], "tokens_hash": local[i]}
			}
			var parent any
			if ev.ParentHash != nil {
				parent = *ev.ParentHash
			}
			out = append(out, map[string]any{"event_id": b.Seq, "data": map[string]any{"stored": map[string]any{"parent_hash": parent, "blocks": blocks}}})
		}
	}
	return out
}

// The sim's load accounting is the service's: a recorded kvrouter run
// (its KV events, routes, first tokens and ends, in order, at their
// virtual times) replayed through kvrouter's HTTP API gives the same
// decision for every request (the same predicted TTFT, learned from the
// same prefill_done times) and the same load on every worker after every
// operation.
func TestLoadAccountingMatchesTheService(t *testing.T) {
	tr := smallTrace(3, 80)
	cfg := smallConfig(tr)
	const seed = 7
	order := arrivalOrder(tr.Requests)
	offered, err := OfferedPrefillRate(tr.Requests)
	require.NoError(t, err)
	stretch := offered / (1.0 * FleetPrefillCapacity(cfg.Engine, cfg.Engines))
	r, err := newRunner(&cfg, runSpec{policy: "kvrouter", load: 1, seed: seed}, order, arrivals(tr.Requests, stretch))
	require.NoError(t, err)
	simRouter := r.pol.(interface{ Router() *route.Router }).Router()

	svc := newService(t, cfg.Engine.BlockSize, seed, r.clock)
	for _, e := range r.engines {
		svc.call("POST", "/v1/workers", map[string]any{"worker_id": e.worker.ID, "model": model, "engine_hash": "off"}, http.StatusCreated)
	}
	counts := map[opKind]int{}
	r.record = func(o op) {
		counts[o.kind]++
		switch o.kind {
		case opEvents:
			svc.call("POST", fmt.Sprintf("/v1/events?worker_id=%d", o.worker.ID), dynamoEvents(t, o.batch), http.StatusOK)
		case opRoute:
			var d struct {
				WorkerID uint64 `json:"worker_id"`
			}
			body := svc.call("POST", "/v1/route", map[string]any{"model": model, "token_ids": o.tokens, "request_id": o.id}, http.StatusOK)
			require.NoError(t, json.Unmarshal(body, &d))
			require.Equal(t, o.worker.ID, d.WorkerID, "request %s: the service chose another worker", o.id)
		case opPrefillDone:
			svc.call("POST", "/v1/requests/"+o.id+"/prefill_done", nil, http.StatusOK)
		case opFree:
			svc.call("DELETE", "/v1/requests/"+o.id, nil, http.StatusOK)
		}
		if o.kind != opEvents {
			require.Equal(t, simRouter.Stats(), svc.srv.Router().Stats(), "load after %v %s", o.kind, o.id)
		}
	}
	require.NoError(t, r.run(tr.Requests))
	assert.Equal(t, 80, counts[opRoute])
	assert.Equal(t, 80, counts[opPrefillDone])
	assert.Equal(t, 80, counts[opFree])
	assert.Greater(t, counts[opEvents], 10)
	assert.Zero(t, svc.srv.Router().Stats().ActiveRequests)
	var hit bool
	for _, w := range r.engines {
		hit = hit || w.e.Stats().PrefixHits > 0
	}
	assert.True(t, hit, "the scenario reuses prefixes, so overlaps were part of the comparison")
}
