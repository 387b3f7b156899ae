package eventplane

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// connectedOf is a replica's connected flag for an engine's rank 0.
func connectedOf(r *replica, worker uint64) bool {
	w, ok := r.ix.Worker(worker)
	return ok && len(w.Ranks) > 0 && w.Ranks[0].Connected
}

// TestEveryReplicaReportsTheHoldersConnectedView: a replica restored from
// a snapshot taken after the engine connected never applies that connect;
// it reports the holder's view all the same.
func TestEveryReplicaReportsTheHoldersConnectedView(t *testing.T) {
	nats := embedded(t)
	f := newFleet(t, nats.URL(), 1)
	a := f.start("a", false)
	f.waitSubscribed()
	e := f.engines[0]
	e.send(5)
	f.waitApplied(a)
	require.Eventually(t, func() bool { return connectedOf(a, e.worker) }, waitFor, 10*time.Millisecond, "the holder never saw its engine connect")
	require.NoError(t, a.plane.WriteSnapshot())

	// a stays the holder: it outweighs b for engine 1 (spread.go), so b
	// never ingests the engine and has only a's view to go by.
	require.Greater(t, weight(e.worker, "a"), weight(e.worker, "b"))
	b := f.start("b", false)
	f.waitSubscribed()
	require.True(t, a.plane.holds(e.worker))
	require.Eventually(t, func() bool { return connectedOf(b, e.worker) }, waitFor, 10*time.Millisecond,
		"replica b does not report the holder's connected view")
}
