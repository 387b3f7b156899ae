package serve

import (
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/internal/logtest"
)

// Dynamo's /register refuses an empty model name, as /v1/workers does.
func TestRegisterRefusesAnEmptyModel(t *testing.T) {
	s := newTestServer(t, testConfig())
	code, body := s.do("POST", "/register", `{"instance_id":1,"endpoint":"tcp://127.0.0.1:5557","model_name":"","block_size":4}`)
	assert.Equal(t, http.StatusBadRequest, code, "%s", body)
	assert.Contains(t, string(body), "model_name")
	s.must(http.StatusBadRequest, "POST", "/v1/workers", `{"worker_id":1,"model":""}`, nil)
}

// A worker re-registered under another model loses its blocks in the old
// index: kvrouter says so, with how many.
func TestReRegisterUnderAnotherModelWarns(t *testing.T) {
	var logs logtest.Buffer
	cfg := testConfig()
	srv, err := New(Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	assert.NoError(t, err)
	assert.NoError(t, srv.Start())
	s := &testServer{t: t, srv: srv, ts: newHTTPTest(t, srv)}
	t.Cleanup(func() { _ = srv.Shutdown(t.Context()) })
	s.must(http.StatusCreated, "POST", "/v1/workers", `{"worker_id":1,"model":"m"}`, nil)
	s.must(http.StatusOK, "POST", "/v1/events?worker_id=1", storedEvent(t, 1, 0, nil, seqTokens(1, 12), 10, core.Options{}), nil)
	s.must(http.StatusOK, "POST", "/v1/workers", `{"worker_id":1,"model":"m"}`, nil)
	assert.NotContains(t, logs.String(), "blocks_dropped", "the same model: nothing dropped")
	s.must(http.StatusCreated, "POST", "/v1/workers", `{"worker_id":1,"model":"other"}`, nil)
	assert.Contains(t, logs.String(), "level=WARN")
	assert.Contains(t, logs.String(), "blocks_dropped=3")
	assert.Contains(t, logs.String(), "old_model=m")
}
