package eventplane

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReplicaWithOtherFlagsUsesTheSharedSettings: the stream's limits and
// the lease bucket's TTL belong to the replica that created them; one
// started with other flags leaves them as they are and adopts them
// (rewriting the TTL under live holders let it take every lease).
func TestReplicaWithOtherFlagsUsesTheSharedSettings(t *testing.T) {
	nats := embedded(t)
	f := newFleet(t, nats.URL(), 2)
	a := f.start("a", false)
	f.waitSubscribed()
	require.Len(t, a.plane.Holding(), 2)

	f.opts.LeaseTTL = time.Second
	f.opts.MaxBytes = 64 << 20
	f.opts.MaxAge = time.Hour
	b := f.start("b", false)

	ctx := context.Background()
	st, err := b.plane.kv.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, 5*time.Second, st.TTL(), "the lease bucket's TTL was rewritten")
	info, err := b.plane.stream.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1<<30), info.Config.MaxBytes, "the stream's byte limit was rewritten")
	assert.Equal(t, 24*time.Hour, info.Config.MaxAge, "the stream's age limit was rewritten")
	assert.Equal(t, 5*time.Second, b.plane.opts.LeaseTTL, "b renews on its own TTL, not the bucket's")

	// b, renewing three times per shared TTL, never takes a lease from a
	// live holder (engines are only handed over to b, spread.go).
	time.Sleep(2 * time.Second) // two of b's own TTLs: long enough to show a theft, not an assertion of timing
	f.waitSpread()
	assert.Zero(t, a.plane.Stats().LeasesLost.Load(), "a lost leases to b")
	assert.Zero(t, b.plane.Stats().LeasesLost.Load())
	assert.Equal(t, map[uint64]int{1: 1, 2: 1}, holders(a, b))
}
