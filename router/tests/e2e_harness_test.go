// Package tests holds kvrouter's end-to-end tests: real engines' wire over
// ZeroMQ on loopback (a Python publisher emitting vLLM's and SGLang's
// bytes), the real HTTP API on 127.0.0.1, and no external service.
package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/internal/enginetest"
	"github.com/kvhash/kvhash/router/config"
	"github.com/kvhash/kvhash/router/ingest"
	"github.com/kvhash/kvhash/router/internal/logtest"
	"github.com/kvhash/kvhash/router/serve"
)

const blockSize = 4

// engine drives router/ingest's test publisher (enginetest.Publisher):
// one Python process running any number of engine ranks, emitting vLLM's
// and SGLang's wire byte for byte.
type engine struct{ *enginetest.Publisher }

func startEngines(t *testing.T) *engine { return &engine{enginetest.StartPublisher(t)} }

type obj = map[string]any

// open starts an engine rank publishing on endpoint (and replaying on
// replay, "" = none). extra adds open's options (replay_shape, topic,
// bind...).
func (e *engine) open(name, endpoint, replay string, extra obj) {
	cmd := obj{"op": "open", "name": name, "endpoint": endpoint}
	if replay != "" {
		cmd["replay"] = replay
	}
	for k, v := range extra {
		cmd[k] = v
	}
	e.Do(cmd)
}

// waitSub blocks until a subscriber's subscription reached the rank.
func (e *engine) waitSub(name string) { e.Do(obj{"op": "wait_sub", "name": name, "timeout": 15}) }

// send publishes one batch of events; opts are send's options (layout,
// bytes_hashes, batch_form, dp_rank, skip, seq).
func (e *engine) send(name string, events []obj, opts obj) uint64 {
	fields := obj{"events": events}
	maps.Copy(fields, opts)
	return e.Send(name, fields)
}

// stored is a BlockStored of consecutive full blocks.
func stored(hashes []int64, parent *int64, tokens []uint32, extra obj) obj {
	ev := obj{"type": "BlockStored", "block_hashes": hashes, "token_ids": tokens, "block_size": blockSize}
	if parent != nil {
		ev["parent_block_hash"] = *parent
	}
	for k, v := range extra {
		ev[k] = v
	}
	return ev
}

func tokens(start, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(start + i)
	}
	return out
}

func hashes(start int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = start + int64(i)
	}
	return out
}

// startOneWorker starts an engine rank "e" publishing on a free port and
// a router with cfg subscribed to it as worker 1 of model "m", and returns
// once the subscription has reached the rank (a PUB drops what it sends
// before), with the port the rank publishes on.
func startOneWorker(t *testing.T, cfg config.Config) (*engine, *router, int) {
	t.Helper()
	eng := startEngines(t)
	r := startRouter(t, cfg)
	port := enginetest.FreePorts(t, 1)
	eng.open("e", enginetest.TCP(port), "", nil)
	r.must(201, "POST", "/v1/workers", obj{"worker_id": 1, "model": "m", "endpoint": enginetest.TCP(port)}, nil)
	eng.waitSub("e")
	return eng, r, port
}

// router is an in-process kvrouter with ZeroMQ ingest, behind a real
// HTTP listener on 127.0.0.1.
type router struct {
	t    *testing.T
	srv  *serve.Server
	url  string
	logs *logtest.Buffer
}

func newIngest(h ingest.Handler, log *slog.Logger) (serve.Ingest, error) {
	return ingest.New(ingest.Options{Handler: h, Logger: log, ReconnectMin: 20 * time.Millisecond, ReconnectMax: 200 * time.Millisecond})
}

// e2eAdminToken: the end-to-end routers run with auth on, as in
// production; call sends it with every request.
const e2eAdminToken = "e2e-admin-token"

func testConfig() config.Config {
	c := config.Default()
	c.BlockSize = blockSize
	c.Index.StabilityMode = "warn"
	c.Security.AdminToken = e2eAdminToken
	return c
}

func startRouter(t *testing.T, cfg config.Config) *router {
	t.Helper()
	logs := &logtest.Buffer{}
	srv, err := serve.New(serve.Options{Config: cfg, NewIngest: newIngest,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	require.NoError(t, err)
	require.NoError(t, srv.Start())
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.Close()
		_ = srv.Shutdown(t.Context())
		if t.Failed() {
			t.Logf("router logs:\n%s", logs.String())
		}
	})
	return &router{t: t, srv: srv, url: ts.URL, logs: logs}
}

// call sends a JSON request to base and decodes the answer into v.
func call(t *testing.T, base, method, path string, body any, v any) int {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, rd)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+e2eAdminToken) // Dynamo's indexer ignores it
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if raw, ok := v.(*json.RawMessage); ok {
		*raw = data
		return resp.StatusCode
	}
	if v != nil && len(data) > 0 {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		require.NoError(t, dec.Decode(v), "%s %s answered %d %s", method, path, resp.StatusCode, data)
	}
	return resp.StatusCode
}

func (r *router) must(want int, method, path string, body any, v any) {
	r.t.Helper()
	var raw json.RawMessage
	code := call(r.t, r.url, method, path, body, &raw)
	require.Equal(r.t, want, code, "%s %s: %s", method, path, raw)
	if v != nil {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		require.NoError(r.t, dec.Decode(v))
	}
}

type decision struct {
	WorkerID      json.Number `json:"worker_id"`
	DPRank        json.Number `json:"dp_rank"`
	OverlapBlocks json.Number `json:"overlap_blocks"`
	RequestID     string      `json:"request_id"`
}

// route asks for a prompt and frees the request at once (no load builds
// up between checks).
func (r *router) route(model string, toks []uint32, extra obj) decision {
	r.t.Helper()
	body := obj{"model": model, "token_ids": toks}
	for k, v := range extra {
		body[k] = v
	}
	var d decision
	r.must(200, "POST", "/v1/route", body, &d)
	r.must(200, "DELETE", "/v1/requests/"+d.RequestID, nil, nil)
	return d
}

// e2eWait caps every wait: generous, for a loaded 2-core CI machine
// running -race packages in parallel (a wait ends when its condition holds).
const e2eWait = 30 * time.Second

// eventually polls cond until it holds (e2eWait at most).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(e2eWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitRoute waits until the prompt routes to worker with overlap blocks
// (answers other than 200, such as the 404 of a model whose first worker
// has not been seen yet, count as not yet).
func (r *router) waitRoute(model string, toks []uint32, extra obj, worker string, overlap int) {
	r.t.Helper()
	body := obj{"model": model, "token_ids": toks}
	for k, v := range extra {
		body[k] = v
	}
	var last json.RawMessage
	deadline := time.Now().Add(e2eWait)
	for {
		var d decision
		if code := call(r.t, r.url, "POST", "/v1/route", body, &last); code == 200 {
			require.NoError(r.t, json.Unmarshal(last, &d))
			r.must(200, "DELETE", "/v1/requests/"+d.RequestID, nil, nil)
			if d.WorkerID.String() == worker && d.OverlapBlocks.String() == fmt.Sprint(overlap) {
				return
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("prompt never routed to worker %s with %d blocks; last answer %s", worker, overlap, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rankView is the part of GET /v1/workers the tests read.
type rankView struct {
	DPRank      int                          `json:"dp_rank"`
	State       string                       `json:"state"`
	Blocks      int                          `json:"blocks"`
	LastSeq     *int                         `json:"last_seq"`
	Connected   bool                         `json:"connected"`
	Gaps        int                          `json:"gaps_lost"`
	Replayed    int                          `json:"gaps_replayed"`
	Restarts    int                          `json:"restarts"`
	Malformed   int                          `json:"malformed_messages"`
	Quarantines int                          `json:"quarantines"`
	Events      map[string]map[string]uint64 `json:"events"`
	Skipped     map[string]uint64            `json:"skipped_blocks"`
}

func (r *router) rank(worker uint64, dpRank int) rankView {
	r.t.Helper()
	var w struct {
		Ranks []rankView `json:"ranks"`
	}
	r.must(200, "GET", fmt.Sprintf("/v1/workers/%d", worker), nil, &w)
	for _, rv := range w.Ranks {
		if rv.DPRank == dpRank {
			return rv
		}
	}
	r.t.Fatalf("worker %d has no rank %d", worker, dpRank)
	return rankView{}
}

// getText GETs url and returns the status and body.
func getText(t *testing.T, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "GET", url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

func containsLine(text, line string) bool {
	for l := range strings.SplitSeq(text, "\n") {
		if l == line {
			return true
		}
	}
	return false
}

var httpClient = &http.Client{Timeout: 5 * time.Second}
