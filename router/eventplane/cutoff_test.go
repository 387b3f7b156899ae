package eventplane

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHolderCutOffFromNATSStopsEveryEngineAtOnce: a holder that loses
// NATS cannot renew its leases, and another replica may take them after
// the TTL: it must stop ingesting all its engines at once, not one per
// blocked renewal (which took TTL/2 each: 1,000 engines, 1.5 hours). It
// takes them back and catches up when NATS returns.
func TestHolderCutOffFromNATSStopsEveryEngineAtOnce(t *testing.T) {
	dir := t.TempDir()
	nats, err := StartEmbedded(dir, 0)
	require.NoError(t, err)
	const engines = 6
	f := newFleet(t, nats.URL(), engines)
	a := f.start("a", false)
	f.waitSubscribed()
	for _, e := range f.engines {
		e.send(3)
	}
	f.waitApplied(a)
	require.Len(t, a.plane.Holding(), engines)

	nats.Shutdown()
	// Well within one TTL (5 s): the renewals alone would not even have
	// failed yet.
	require.Eventually(t, func() bool {
		for _, e := range f.engines {
			if e.subscribed() {
				return false
			}
		}
		return len(a.plane.Holding()) == 0
	}, f.opts.LeaseTTL*6/10, 10*time.Millisecond, "a holder cut off from NATS still ingests")
	assert.Equal(t, uint64(engines), a.plane.Stats().LeasesLost.Load())

	nats, err = StartEmbedded(dir, nats.Port())
	require.NoError(t, err)
	t.Cleanup(nats.Shutdown)
	f.waitSubscribed()
	for _, e := range f.engines {
		e.send(3)
	}
	readyAndExact(t, a, f.engines...)
	assert.Len(t, a.plane.Holding(), engines)
}
