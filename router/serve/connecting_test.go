package serve

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/ingest"
	"github.com/kvhash/kvhash/router/internal/logtest"
)

// A worker whose event stream never connects (nothing listens at its
// endpoint) shows as connecting, is scored by load only (the blocks the
// router holds for it may be stale), and is logged once with a WARN.
func TestWorkerThatNeverConnects(t *testing.T) {
	var logs logtest.Buffer
	srv, err := New(Options{Config: testConfig(), Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		ConnectWarnAfter: 100 * time.Millisecond,
		NewIngest: func(h ingest.Handler, l *slog.Logger) (Ingest, error) {
			return ingest.New(ingest.Options{Handler: h, Logger: l})
		}})
	require.NoError(t, err)
	require.NoError(t, srv.Start())
	t.Cleanup(func() { _ = srv.Shutdown(t.Context()) })
	s := &testServer{t: t, srv: srv, ts: newHTTPTest(t, srv)}
	s.must(http.StatusCreated, "POST", "/v1/workers", `{"worker_id":1,"model":"m","endpoint":"tcp://127.0.0.1:1"}`, nil)
	s.must(http.StatusCreated, "POST", "/v1/workers", `{"worker_id":2,"model":"m"}`, nil)
	prompt := seqTokens(1, 8)
	for id := range uint64(2) {
		s.must(http.StatusOK, "POST", fmt.Sprintf("/v1/events?worker_id=%d", id+1), storedEvent(t, id+1, 0, nil, prompt, 100, core.Options{}), nil)
	}

	var workers struct {
		Workers []struct {
			WorkerID uint64 `json:"worker_id"`
			Ranks    []struct {
				State     string `json:"state"`
				Connected bool   `json:"connected"`
			} `json:"ranks"`
		} `json:"workers"`
	}
	s.must(http.StatusOK, "GET", "/v1/workers", "", &workers)
	require.Len(t, workers.Workers, 2)
	assert.Equal(t, "connecting", workers.Workers[0].Ranks[0].State)
	assert.Equal(t, "live", workers.Workers[1].Ranks[0].State, "no endpoint: nothing to connect")

	var d struct {
		WorkerID   uint64 `json:"worker_id"`
		Candidates []struct {
			WorkerID      uint64 `json:"worker_id"`
			OverlapBlocks uint32 `json:"overlap_blocks"`
			State         string `json:"state"`
		} `json:"candidates"`
	}
	s.must(http.StatusOK, "POST", "/v1/route", `{"model":"m","token_ids":`+tokensJSON(prompt)+`}`, &d)
	assert.Equal(t, uint64(2), d.WorkerID, "the connected worker's cache counts")
	for _, c := range d.Candidates {
		if c.WorkerID == 1 {
			assert.Equal(t, "connecting", c.State)
			assert.Zero(t, c.OverlapBlocks, "scored by load only")
		}
	}
	require.Eventually(t, func() bool {
		return assert.ObjectsAreEqual(1, strings.Count(logs.String(), "has not connected"))
	}, 10*time.Second, 20*time.Millisecond, "one WARN: %s", logs.String())
	assert.Contains(t, logs.String(), "level=WARN")
	assert.Contains(t, logs.String(), "endpoint=tcp://127.0.0.1:1")
	time.Sleep(1200 * time.Millisecond) // another pass of the loop: no second WARN
	assert.Equal(t, 1, strings.Count(logs.String(), "has not connected"))
}
