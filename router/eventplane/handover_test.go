package eventplane

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAHandOverThatComesBackUntakenIsNotRepeated: the engine's preferred
// replica announces itself but never takes leases (its JetStream
// requests fail, say). The holder hands the engine over once, takes it
// back after a TTL, and keeps it: it does not leave the engine unread
// every other TTL.
func TestAHandOverThatComesBackUntakenIsNotRepeated(t *testing.T) {
	nats := embedded(t)
	f := newFleet(t, nats.URL(), 1)
	f.opts.LeaseTTL = time.Second
	e := f.engines[0]
	ghost := "a-ghost"
	for ; weight(e.worker, ghost) < weight(e.worker, "a"); ghost += "x" {
	}
	a := f.start("a", false)
	f.waitSubscribed()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // the ghost's holdings, as its heartbeats would send them
		tick := time.NewTicker(f.opts.HeartbeatInterval)
		defer tick.Stop()
		for {
			data, err := encodeFleet(&fleetMsg{Op: fleetHoldings, Replica: ghost, Workers: []uint64{e.worker}})
			if err == nil {
				_ = a.plane.nc.Publish(a.plane.opts.fleetSubject(ghost), data)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	require.Eventually(t, func() bool { return a.plane.Stats().HandedOver.Load() == 1 }, waitFor, 10*time.Millisecond,
		"a never handed the engine over to its preferred replica")
	require.Eventually(t, func() bool { return a.plane.holds(e.worker) }, waitFor, 10*time.Millisecond,
		"a never took back the engine nobody took")
	// Six TTLs: without the back-off, a would hand it over twice more.
	deadline := time.Now().Add(6 * f.opts.LeaseTTL)
	for time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	assert.Equal(t, uint64(1), a.plane.Stats().HandedOver.Load(), "the hand-over was repeated")
	assert.True(t, a.plane.holds(e.worker))
}
