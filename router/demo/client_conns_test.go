package demo

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The replay's client closes an idle connection before kvrouter would,
// whatever kvrouter's idle timeout.
func TestReplayClientLetsIdleConnectionsGoFirst(t *testing.T) {
	for _, serverIdle := range []time.Duration{0, time.Second, 20 * time.Second, 120 * time.Second, time.Hour} {
		tr := replayClient(64, serverIdle).Transport.(*http.Transport)
		assert.Positive(t, tr.IdleConnTimeout, "server idle %v", serverIdle)
		if serverIdle > 0 {
			assert.Less(t, tr.IdleConnTimeout, serverIdle, "server idle %v", serverIdle)
		}
		assert.Equal(t, 64, tr.MaxConnsPerHost)
	}
}
