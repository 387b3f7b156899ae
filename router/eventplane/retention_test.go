package eventplane

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRestartedReplicaWhoseGapLeftTheStreamRebuildsFromTheEngines: the
// messages after the newest snapshot are gone from the stream (retention
// took them). A replica restoring it would serve a silent hole; instead it
// has the holder rebuild the engine from the engine, and says ready only
// with the engine's true index.
func TestRestartedReplicaWhoseGapLeftTheStreamRebuildsFromTheEngines(t *testing.T) {
	nats := embedded(t)
	f := newFleet(t, nats.URL(), 1)
	e := f.engines[0]
	require.Greater(t, weight(e.worker, "a"), weight(e.worker, "b"), "a must stay the holder")
	a := f.start("a", false)
	f.waitSubscribed()
	e.send(10)
	f.waitApplied(a)
	require.NoError(t, a.plane.WriteSnapshot())
	e.send(20)
	f.waitApplied(a)
	// Retention: only the last 3 messages are left.
	require.NoError(t, a.plane.stream.Purge(context.Background(), jetstream.WithPurgeKeep(3)))

	b := f.start("b", false)
	f.waitSubscribed()
	e.send(2)
	readyAndExact(t, b, e)
	readyAndExact(t, a, e)
	assert.True(t, a.plane.holds(e.worker))
}
