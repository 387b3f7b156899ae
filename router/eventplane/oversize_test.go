package eventplane

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOversizedBatchesAreReportedLostNotRetried: a batch over the
// server's max_payload cannot be published; it must neither block the
// engine's stream (retried forever) nor vanish silently: every replica
// hears it as a lost gap, and the batches after it still flow.
func TestOversizedBatchesAreReportedLostNotRetried(t *testing.T) {
	nats, err := startEmbedded(t.TempDir(), 0, 4096)
	require.NoError(t, err)
	t.Cleanup(nats.Shutdown)
	f := &fleet{t: t, url: nats.URL(), opts: testOptions(nats.URL())}
	f.engines = []*testEngine{newTestEngineSized(t, 1, 1, 1), newTestEngineSized(t, 2, 8, 16)} // ~100 B and ~10 KB batches
	a, b := f.start("a", false), f.start("b", false)
	f.waitSubscribed()
	for _, e := range f.engines {
		e.send(3)
	}
	small := &fleet{t: t, engines: f.engines[:1]}
	small.waitApplied(a, b)
	for _, r := range []*replica{a, b} {
		require.Eventually(t, func() bool {
			w, ok := r.ix.Worker(2)
			return ok && w.Ranks[0].Gaps == 3
		}, waitFor, 10*time.Millisecond, "replica %s: each oversized batch is a lost gap", r.id)
		small, ok := r.ix.Worker(1)
		require.True(t, ok)
		assert.Zero(t, small.Ranks[0].Gaps, "replica %s: small batches flow", r.id)
	}
	var oversized uint64
	require.Eventually(t, func() bool {
		oversized = a.plane.Stats().Oversized.Load() + b.plane.Stats().Oversized.Load()
		return oversized == 3
	}, waitFor, 10*time.Millisecond, "the oversized batches were never all counted")
	assert.Zero(t, a.plane.Stats().PublishRetries.Load()+b.plane.Stats().PublishRetries.Load(), "never retried")
}
