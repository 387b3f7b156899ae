package indexer

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
)

// messages counts the fixture's log records by message.
func (l *logRecorder) messages() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for _, r := range l.records {
		out[r.Message]++
	}
	return out
}

// A rank sending violating events at any rate logs at most
// violationLogBurst violation records a window; the next window's first
// record says how many were dropped. Every violation is still counted,
// and another rank's records are not held back by it.
func TestViolationRecordsAreLimitedPerRank(t *testing.T) {
	f := newFixture(t, nil)
	f.addWorker(1, "m", 1)
	f.addWorker(2, "m", 1)
	noisy, quiet := src(1, "m", 0), src(2, "m", 0)
	const events = 1000
	for i := range uint64(events) {
		f.send(noisy, removed(1_000_000+i)) // an unknown block: block_not_found
	}
	assert.Equal(t, violationLogBurst, f.logs.messages()[core.LogViolation])
	assert.Equal(t, uint64(events), f.rankInfo(1, 0).Violations[core.ViolationBlockNotFound], "every one counted")

	f.send(quiet, removed(42))
	assert.Equal(t, violationLogBurst+1, f.logs.messages()[core.LogViolation], "the other rank's record passes")

	f.clock.Advance(violationLogWindow)
	f.send(noisy, removed(7))
	var dropped []slog.Record
	f.logs.mu.Lock()
	for _, r := range f.logs.records {
		if r.Message != core.LogViolation && r.Message != core.LogMoreViolations && r.Level == slog.LevelWarn {
			dropped = append(dropped, r)
		}
	}
	f.logs.mu.Unlock()
	require.Len(t, dropped, 1, "one record of what the window dropped")
	attrs := map[string]uint64{}
	dropped[0].Attrs(func(a slog.Attr) bool {
		if a.Value.Kind() == slog.KindUint64 {
			attrs[a.Key] = a.Value.Uint64()
		}
		return true
	})
	assert.Equal(t, map[string]uint64{"worker_id": 1, "dp_rank": 0, "dropped": events - violationLogBurst}, attrs)
	assert.Equal(t, violationLogBurst+2, f.logs.messages()[core.LogViolation], "the new window's record passes")
}
