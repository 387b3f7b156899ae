package eventplane

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLeaseRenewalSurvivesALostReplyAndYieldsToAnotherHolder: a renewal
// whose reply was lost (the key moved on, still naming this replica) keeps
// the lease; a key naming another replica ends it, and the subscription.
func TestLeaseRenewalSurvivesALostReplyAndYieldsToAnotherHolder(t *testing.T) {
	nats := embedded(t)
	f := newFleet(t, nats.URL(), 1)
	a := f.start("a", false)
	f.waitSubscribed()
	require.Equal(t, []uint64{1}, a.plane.Holding())
	ctx := context.Background()
	key := leaseKey(1)

	e, err := a.plane.kv.Get(ctx, key)
	require.NoError(t, err)
	_, err = a.plane.kv.Update(ctx, key, []byte("a"), e.Revision()) // a renewal written, its reply lost
	require.NoError(t, err)
	l := a.plane.leases[1]
	a.plane.tend(l)
	assert.True(t, l.held.Load(), "still ours")
	assert.Zero(t, a.plane.Stats().LeasesLost.Load())

	e, err = a.plane.kv.Get(ctx, key)
	require.NoError(t, err)
	_, err = a.plane.kv.Update(ctx, key, []byte("b"), e.Revision()) // another replica took it
	require.NoError(t, err)
	a.plane.tend(l)
	assert.False(t, l.held.Load())
	assert.Equal(t, uint64(1), a.plane.Stats().LeasesLost.Load())
	require.Eventually(t, func() bool { return !f.engines[0].subscribed() }, waitFor, 10*time.Millisecond,
		"the replica still subscribes to an engine it lost")
}
