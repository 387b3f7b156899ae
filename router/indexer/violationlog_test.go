package indexer

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/enginehash"
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

// recordsOf counts the fixture's log records of message at level that name
// worker id.
func (l *logRecorder) recordsOf(level slog.Level, message string, id uint64) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.records {
		if r.Level == level && r.Message == message && recordWorker(r).ID == id {
			n++
		}
	}
	return n
}

// vLLM's duplicate block copies (TestVLLMDuplicateBlocksDoNotQuarantineAVerifiedRank)
// are logged at DEBUG as copies when the rank's ids are verified, and
// take none of its log budget; a rank that cannot be verified logs them
// as violations, as before. Every one is counted either way, and a
// verified rank's other violations are still warnings.
func TestAVerifiedRanksDuplicateCopiesAreLoggedAtDebug(t *testing.T) {
	for _, tc := range []struct {
		name, engineHash string
		wantVerdict      Verdict
		copies           bool
	}{
		{"verified", "auto", VerdictVerified, true},
		{"not verified (engine_hash off)", "off", VerdictUnverifiable, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			f.addWorkerHash(1, "m", tc.engineHash)
			engine := vllmEngine(t, enginehash.VLLMSHA256CBOR, enginehash.DefaultVLLMSeed)
			w := src(1, "m", 0)
			// More blocks than core records one by one: the rest are in a
			// summary record.
			prefix := tokens(100, 20*testBS)
			ids, last := engine.ids(t, nil, prefix)
			tail := tokens(9000, testBS)
			tailIDs, _ := engine.ids(t, &last, tail)

			f.send(w, stored(nil, prefix, ids...))
			require.Equal(t, tc.wantVerdict, f.rankInfo(1, 0).EngineHash.Verdict)
			for range violationLogBurst {
				f.send(w, stored(nil, prefix, ids...)) // a second copy: duplicate_store x 20
			}
			f.send(w, removed(ids[19]))                   // the first copy's last block evicted
			f.send(w, stored(&ids[19], tail, tailIDs...)) // parent_not_found
			f.send(w, removed(ids[19]))                   // block_not_found

			ri := f.rankInfo(1, 0)
			assert.Equal(t, uint64(20*violationLogBurst), ri.Violations[core.ViolationDuplicateStore], "every one counted")
			assert.Equal(t, uint64(1), ri.Violations[core.ViolationParentNotFound])
			assert.Equal(t, uint64(1), ri.Violations[core.ViolationBlockNotFound])
			copies := f.logs.recordsOf(slog.LevelDebug, LogVerifiedCopy, 1)
			summaries := f.logs.recordsOf(slog.LevelDebug, LogVerifiedCopies, 1)
			warned := f.logs.recordsOf(slog.LevelWarn, core.LogViolation, 1)
			if !tc.copies {
				assert.Zero(t, copies+summaries)
				assert.Equal(t, violationLogBurst, warned+f.logs.recordsOf(slog.LevelWarn, core.LogMoreViolations, 1), "violations and summaries, limited")
				return
			}
			assert.Zero(t, warned)
			assert.Zero(t, f.logs.recordsOf(slog.LevelWarn, core.LogMoreViolations, 1))
			assert.Equal(t, 16*violationLogBurst+2, copies, "each event's 16 recorded, then the parent and the block")
			assert.Equal(t, violationLogBurst, summaries, "one per event for its other 4")

			// Its log budget is whole: a violation no copy makes is a
			// warning, as is a hash mismatch (another rank's problem).
			self := tokens(7000, testBS)
			f.send(w, stored(&tailIDs[0], self, tailIDs[0])) // names itself as parent
			assert.Equal(t, 1, f.logs.count(slog.LevelWarn, "kind", core.ViolationSelfReference.String()))
		})
	}
}
