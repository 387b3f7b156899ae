package eventplane

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readyAndExact waits until r says ready with the engines' true index.
func readyAndExact(t *testing.T, r *replica, engines ...*testEngine) {
	t.Helper()
	want := reference(t, engines...)
	require.Eventually(t, func() bool {
		ok, _ := r.plane.Ready()
		return ok && assert.ObjectsAreEqual(want, exported(r))
	}, waitFor, 20*time.Millisecond, "replica %s never became ready with the engines' index", r.id)
}

// TestNATSLosesItsStoreAndEveryReplicaRebuildsFromTheEngines: the server
// comes back on the same port with an empty JetStream store. The stream
// is recreated (by the replicas themselves, or by a replica started
// afterwards) with sequences far below what the running replicas
// applied; each drops its position, every engine is rebuilt from the
// engine's replay, and the replicas say ready only with the true index.
func TestNATSLosesItsStoreAndEveryReplicaRebuildsFromTheEngines(t *testing.T) {
	for _, tc := range []struct {
		name       string
		newReplica bool // a replica started after the loss recreates the stream first
	}{
		{"the running replicas recreate the stream", false},
		{"a replica started afterwards recreates the stream", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			nats, err := StartEmbedded(dir, 0)
			require.NoError(t, err)
			f := newFleet(t, nats.URL(), 2)
			rs := []*replica{f.start("a", false), f.start("b", false)}
			f.waitSubscribed()
			for _, e := range f.engines {
				e.send(40)
			}
			f.waitApplied(rs...)

			port := nats.Port()
			nats.Shutdown()
			require.NoError(t, os.RemoveAll(dir))
			require.NoError(t, os.MkdirAll(dir, 0o755))
			nats, err = StartEmbedded(dir, port)
			require.NoError(t, err)
			t.Cleanup(nats.Shutdown)
			if tc.newReplica {
				rs = append(rs, f.start("c", false))
			}
			f.waitSubscribed()
			for _, e := range f.engines {
				e.send(5)
			}
			for _, r := range rs {
				readyAndExact(t, r, f.engines...)
			}
			for _, r := range rs[:2] {
				assert.Positive(t, r.plane.Stats().Resyncs.Load(), "replica %s never dropped its stale stream position", r.id)
			}
			assert.Equal(t, map[uint64]int{1: 1, 2: 1}, holders(rs...), "each engine is ingested by exactly one replica")
		})
	}
}
