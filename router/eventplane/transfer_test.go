package eventplane

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestSnapshotTransferTimeoutGrowsWithTheSnapshot: a fleet-sized snapshot
// (4.3 GB for 100M blocks) is not cut off by a fixed deadline; the
// deadline only catches a transfer slower than minTransferRate.
func TestSnapshotTransferTimeoutGrowsWithTheSnapshot(t *testing.T) {
	for _, tc := range []struct {
		bytes    int64
		atLeast  time.Duration
		atMost   time.Duration
		scenario string
	}{
		{0, 10 * time.Second, 12 * time.Second, "empty index"},
		{64 << 20, 25 * time.Second, 30 * time.Second, "a small fleet"},
		{4_300_000_000, 17 * time.Minute, 18 * time.Minute, "1,000 engines, 100M blocks"},
	} {
		got := transferTimeout(tc.bytes)
		assert.GreaterOrEqual(t, got, tc.atLeast, tc.scenario)
		assert.LessOrEqual(t, got, tc.atMost, tc.scenario)
	}
}
