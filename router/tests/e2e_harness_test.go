// Package tests holds kvrouter's end-to-end tests: real engines' wire over
// ZeroMQ on loopback (a Python publisher emitting vLLM's and SGLang's
// bytes), the real HTTP API on 127.0.0.1, and no external service.
package tests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/config"
	"github.com/kvhash/kvhash/router/ingest"
	"github.com/kvhash/kvhash/router/serve"
)

const blockSize = 4

// repoRoot is the directory holding go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "no go.mod above the test")
		dir = parent
	}
}

// venvPython is build/venv's interpreter; the tests fail (not skip)
// without it: `make test` builds the venv first.
func venvPython(t *testing.T) string {
	t.Helper()
	py := filepath.Join(repoRoot(t), "build", "venv", "bin", "python")
	_, err := os.Stat(py)
	require.NoError(t, err, "the e2e tests need the venv (pyzmq, msgspec, Dynamo's wheel): run `make venv`")
	return py
}

// engine drives router/ingest's test publisher (testdata/publisher.py):
// one Python process running any number of engine ranks, each a PUB
// socket and an optional ROUTER replay socket, emitting vLLM's and
// SGLang's wire byte for byte (msgspec over the engines' structs).
type engine struct {
	t   *testing.T
	in  io.WriteCloser
	out *bufio.Scanner
	mu  sync.Mutex
}

func startEngines(t *testing.T) *engine {
	t.Helper()
	script := filepath.Join(repoRoot(t), "router", "ingest", "testdata", "publisher.py")
	cmd := exec.Command(venvPython(t), script)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	e := &engine{t: t, in: in, out: bufio.NewScanner(out)}
	e.out.Buffer(make([]byte, 1<<20), 1<<20)
	require.True(t, e.out.Scan(), "the publisher did not start")
	t.Cleanup(func() {
		_, _ = io.WriteString(in, `{"op":"quit"}`+"\n")
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return e
}

type obj = map[string]any

func (e *engine) do(cmd obj) obj {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	line, err := json.Marshal(cmd)
	require.NoError(e.t, err)
	_, err = e.in.Write(append(line, '\n'))
	require.NoError(e.t, err)
	require.True(e.t, e.out.Scan(), "the publisher exited")
	var ans obj
	require.NoError(e.t, json.Unmarshal(e.out.Bytes(), &ans))
	require.Equal(e.t, true, ans["ok"], "publisher: %v (command %s)", ans["error"], line)
	return ans
}

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
	e.do(cmd)
}

// waitSub blocks until a subscriber's subscription reached the rank.
func (e *engine) waitSub(name string) { e.do(obj{"op": "wait_sub", "name": name, "timeout": 15}) }

// send publishes one batch of events; opts are send's options (layout,
// bytes_hashes, batch_form, dp_rank, skip, seq).
func (e *engine) send(name string, events []obj, opts obj) uint64 {
	cmd := obj{"op": "send", "name": name, "events": events}
	for k, v := range opts {
		cmd[k] = v
	}
	return uint64(e.do(cmd)["seq"].(float64))
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

// freePorts returns the first of n consecutive free ports on 127.0.0.1.
func freePorts(t *testing.T, n int) int {
	t.Helper()
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		base := l.Addr().(*net.TCPAddr).Port
		ls, ok := []net.Listener{l}, true
		for i := 1; i < n; i++ {
			li, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+i))
			if err != nil {
				ok = false
				break
			}
			ls = append(ls, li)
		}
		for _, li := range ls {
			_ = li.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no run of free ports")
	return 0
}

func tcp(port int) string { return fmt.Sprintf("tcp://127.0.0.1:%d", port) }

// router is an in-process kvrouter with ZeroMQ ingest, behind a real
// HTTP listener on 127.0.0.1.
type router struct {
	t    *testing.T
	srv  *serve.Server
	url  string
	logs *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newIngest(h ingest.Handler, log *slog.Logger) (serve.Ingest, error) {
	return ingest.New(ingest.Options{Handler: h, Logger: log, ReconnectMin: 20 * time.Millisecond, ReconnectMax: 200 * time.Millisecond})
}

func testConfig() config.Config {
	c := config.Default()
	c.BlockSize = blockSize
	c.Index.StabilityMode = "warn"
	return c
}

func startRouter(t *testing.T, cfg config.Config) *router {
	t.Helper()
	logs := &syncBuffer{}
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
