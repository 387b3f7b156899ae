package serve

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/config"
)

const testBlockSize = 4

// testConfig is a small valid config.
func testConfig() config.Config {
	c := config.Default()
	c.BlockSize = testBlockSize
	c.Log.Level = "debug"
	return c
}

// testServer is a started Server behind a real HTTP listener on
// 127.0.0.1, without ZeroMQ (HTTP publishers only).
type testServer struct {
	t   *testing.T
	srv *Server
	ts  *httptest.Server
}

func newTestServer(t *testing.T, cfg config.Config) *testServer {
	t.Helper()
	srv, err := New(Options{Config: cfg})
	require.NoError(t, err)
	require.NoError(t, srv.Start())
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.Close()
		_ = srv.Shutdown(t.Context())
	})
	return &testServer{t: t, srv: srv, ts: ts}
}

// do sends a request and returns the status and body.
func (s *testServer) do(method, path, body string) (int, []byte) {
	s.t.Helper()
	req, err := http.NewRequestWithContext(s.t.Context(), method, s.ts.URL+path, strings.NewReader(body))
	require.NoError(s.t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.ts.Client().Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	return resp.StatusCode, out
}

// must sends a request that must answer want, and decodes the answer
// into v (when not nil).
func (s *testServer) must(want int, method, path, body string, v any) {
	s.t.Helper()
	code, out := s.do(method, path, body)
	require.Equal(s.t, want, code, "%s %s: %s", method, path, out)
	if v != nil {
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber()
		require.NoError(s.t, dec.Decode(v), "%s", out)
	}
}

// storedEvent builds a Dynamo-JSON store of tokens (full blocks) for a
// worker rank, engine hashes base+i, chained under parent.
func storedEvent(t *testing.T, id uint64, dpRank uint32, parent *uint64, tokens []uint32, base uint64, opts core.Options) string {
	t.Helper()
	local, err := core.BlockHashes(tokens, testBlockSize, opts)
	require.NoError(t, err)
	ev := core.Event{ID: id, DPRank: dpRank, Kind: core.EventStored, ParentHash: parent}
	for i, h := range local {
		ev.Blocks = append(ev.Blocks, core.StoredBlock{BlockHash: base + uint64(i), TokensHash: h})
	}
	b, err := ev.MarshalJSON()
	require.NoError(t, err)
	return string(b)
}

// seqTokens returns n tokens start, start+1, ...
func seqTokens(start, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(start + i)
	}
	return out
}

func tokensJSON(tokens []uint32) string {
	b, _ := json.Marshal(tokens)
	return string(b)
}

func newHTTPTest(t *testing.T, srv *Server) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts
}

func httpHandlerFunc(f func()) http.Handler {
	return http.HandlerFunc(func(http.ResponseWriter, *http.Request) { f() })
}

func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }

func newRequest(t *testing.T, method, path string) *http.Request {
	t.Helper()
	return httptest.NewRequestWithContext(t.Context(), method, path, nil)
}

func jsonUnmarshalNumber(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}
