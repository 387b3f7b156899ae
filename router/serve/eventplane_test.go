package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
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
