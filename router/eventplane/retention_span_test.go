package eventplane

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestNeededStreamBytesSizesRetentionFromTheSnapshotInterval(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		name                  string
		bytes, maxBytes, want uint64
		span, interval        time.Duration
	}{
		{"not full: the age limit decides", gib / 2, gib, 0, 10 * time.Second, time.Minute},
		{"full, holds three intervals", gib, gib, 0, 3 * time.Minute, time.Minute},
		// 1,000 engines at 30 batches/s of 9.6 KB: 288 MB/s, so 1 GiB
		// holds under 4 s; three 1-minute intervals need 51.8 GB.
		{"full, holds seconds", gib, gib, 51_539_607_552, 3727 * time.Millisecond, time.Minute},
		{"no byte limit", gib, 0, 0, time.Second, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := neededStreamBytes(tc.bytes, tc.maxBytes, tc.span, tc.interval)
			if tc.want == 0 {
				assert.Zero(t, got)
				return
			}
			assert.InEpsilon(t, tc.want, got, 0.01)
		})
	}
}
