package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/config"
	"github.com/kvhash/kvhash/router/eventplane"
)

// readyz returns /readyz's status and body.
func readyzOf(t *testing.T, h http.Handler) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	var body map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	return rec.Code, body
}

func TestReadyzFollowsTheEventPlane(t *testing.T) {
	dir := t.TempDir()
	nats, err := eventplane.StartEmbedded(dir, 0)
	require.NoError(t, err)
	cfg := config.Default()
	cfg.BlockSize = 16
	cfg.NATS = config.NATS{URL: nats.URL(), ReplicaID: "r1", LeaseTTL: time.Second}
	srv, err := New(Options{Config: cfg})
	require.NoError(t, err)
	require.NotNil(t, srv.EventPlane())
	require.NoError(t, srv.Start())
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })

	require.Eventually(t, func() bool { code, _ := readyzOf(t, srv.Handler()); return code == http.StatusOK },
		10*time.Second, 20*time.Millisecond, "never ready on the event plane")
	_, body := readyzOf(t, srv.Handler())
	assert.Equal(t, true, body["checks"].(map[string]any)["event_plane"])
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	assert.Contains(t, rec.Body.String(), `kvrouter_eventplane_ready{replica="r1"} 1`)

	nats.Shutdown()
	require.Eventually(t, func() bool { code, _ := readyzOf(t, srv.Handler()); return code == http.StatusServiceUnavailable },
		10*time.Second, 20*time.Millisecond, "still ready while cut off from NATS")
	_, body = readyzOf(t, srv.Handler())
	assert.Equal(t, false, body["checks"].(map[string]any)["event_plane"])
	assert.Contains(t, body["event_plane"], "NATS")

	nats, err = eventplane.StartEmbedded(dir, nats.Port())
	require.NoError(t, err)
	t.Cleanup(nats.Shutdown)
	require.Eventually(t, func() bool { code, _ := readyzOf(t, srv.Handler()); return code == http.StatusOK },
		20*time.Second, 20*time.Millisecond, "not ready again after NATS came back")
	require.NoError(t, srv.Shutdown(context.Background()), "a clean shutdown writes the last snapshot")
	assert.Equal(t, uint64(1), srv.EventPlane().Stats().Snapshots.Load())
}

func TestWithoutNATSReadyzHasNoEventPlaneCheck(t *testing.T) {
	cfg := config.Default()
	cfg.BlockSize = 16
	srv, err := New(Options{Config: cfg})
	require.NoError(t, err)
	require.Nil(t, srv.EventPlane())
	require.NoError(t, srv.Start())
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	code, body := readyzOf(t, srv.Handler())
	assert.Equal(t, http.StatusOK, code)
	assert.NotContains(t, body["checks"], "event_plane")
}

// replicaServer starts a kvrouter replica on the NATS server at url.
func replicaServer(t *testing.T, url, id string) *Server {
	t.Helper()
	cfg := config.Default()
	cfg.BlockSize = 16
	cfg.NATS = config.NATS{URL: url, ReplicaID: id, LeaseTTL: time.Second}
	srv, err := New(Options{Config: cfg})
	require.NoError(t, err)
	require.NoError(t, srv.Start())
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return srv
}

// TestReplicaRestartedInAnAPIRegisteredFleetTakesTheLeases: workers
// registered by POST /v1/workers live only in the index, and so in the
// event plane's snapshot. A replica that restarts restores them from it
// and must contend for their leases as after a file snapshot: when the
// other replica leaves, it ingests them (it said ready and ingested
// nothing).
func TestReplicaRestartedInAnAPIRegisteredFleetTakesTheLeases(t *testing.T) {
	nats, err := eventplane.StartEmbedded(t.TempDir(), 0)
	require.NoError(t, err)
	t.Cleanup(nats.Shutdown)
	a := replicaServer(t, nats.URL(), "a")
	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/workers",
		strings.NewReader(`{"worker_id": 7, "model": "m", "endpoint": "tcp://127.0.0.1:1"}`)))
	require.Less(t, rec.Code, 300, rec.Body.String())
	require.Eventually(t, func() bool { return len(a.EventPlane().Holding()) == 1 }, 10*time.Second, 10*time.Millisecond,
		"replica a never took the worker's lease")
	require.NoError(t, a.EventPlane().WriteSnapshot())

	b := replicaServer(t, nats.URL(), "b") // restores a's snapshot: worker 7, registered nowhere on b
	_, ok := b.Indexer().Worker(7)
	require.True(t, ok, "the snapshot did not restore the worker")
	require.NoError(t, a.Shutdown(context.Background())) // releases its leases
	require.Eventually(t, func() bool { return len(b.EventPlane().Holding()) == 1 }, 10*time.Second, 10*time.Millisecond,
		"the restarted replica never takes the restored worker's lease")
}
