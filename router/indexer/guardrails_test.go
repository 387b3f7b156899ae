package indexer

import (
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/ingest"
)

// replayLog records replay requests.
type replayLog struct {
	mu   sync.Mutex
	srcs []ingest.Source
	err  error
}

func (r *replayLog) RequestReplay(src ingest.Source, from uint64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.srcs = append(r.srcs, src)
	return r.err
}

func (r *replayLog) calls() []ingest.Source {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ingest.Source(nil), r.srcs...)
}

func TestEnforceModeQuarantinesAndRecovers(t *testing.T) {
	replays := &replayLog{}
	f := newFixture(t, func(o *Options) {
		o.Mode = core.ModeEnforce
		o.Replay = replays
		o.QuarantineSettle = 30 * time.Second
	})
	f.addWorker(1, "m", 1)
	f.addWorker(2, "m", 2)
	prompt := tokens(1, 8)
	good, bad := src(1, "m", 0), src(2, "m", 1)
	f.send(good, stored(nil, prompt, 11, 12))
	f.send(bad, stored(nil, prompt[:4], 21)) // same content, another name: hash_mismatch

	ri := f.rankInfo(2, 1)
	assert.Equal(t, StateQuarantined, ri.State)
	assert.Contains(t, ri.Reason, "hash_mismatch")
	assert.Equal(t, uint64(1), ri.Quarantines)
	assert.Zero(t, ri.Blocks, "its blocks were cleared")
	assert.Equal(t, uint64(1), ri.Violations[core.ViolationHashMismatch])
	assert.Equal(t, []ingest.Source{bad}, replays.calls(), "a replay was asked of its stream")
	assert.Equal(t, 1, f.logs.count(slog.LevelError, "fix", stabilityFix), "one clear error with the fix")
	assert.Equal(t, StateLive, f.rankInfo(1, 0).State, "the first namer is not blamed")

	// Quarantined ranks score by load only, even for blocks they store.
	f.send(bad, stored(nil, tokens(900, 4), 22))
	assert.Empty(t, f.overlap("m", tokens(900, 4), PromptOptions{}))
	cands, err := f.ix.Candidates(ModelKey{Model: "m"})
	require.NoError(t, err)
	assert.Contains(t, cands, Candidate{Worker: wk(2, 1), State: StateQuarantined})

	// A content violation restarts the clock.
	f.clock.Advance(20 * time.Second)
	f.send(bad, stored(nil, prompt[:4], 23)) // hash_mismatch again
	f.clock.Advance(20 * time.Second)
	f.send(bad, stored(nil, tokens(950, 4), 24))
	assert.Equal(t, StateQuarantined, f.rankInfo(2, 1).State, "only 20 s clean")
	assert.Len(t, replays.calls(), 1, "no second replay while quarantined")

	f.clock.Advance(11 * time.Second)
	f.send(bad, stored(nil, tokens(990, 4), 25))
	ri = f.rankInfo(2, 1)
	assert.Equal(t, StateLive, ri.State)
	assert.Empty(t, ri.Reason)
	assert.Equal(t, map[core.Worker]uint32{wk(2, 1): 1}, f.overlap("m", tokens(900, 4), PromptOptions{}))
}

func TestWarnModeNeverQuarantines(t *testing.T) {
	replays := &replayLog{}
	f := newFixture(t, func(o *Options) { o.Replay = replays })
	f.addWorker(1, "m", 1)
	f.addWorker(2, "m", 1)
	prompt := tokens(1, 4)
	f.send(src(1, "m", 0), stored(nil, prompt, 11))
	f.send(src(2, "m", 0), stored(nil, prompt, 21))
	f.send(src(2, "m", 0), removed(99))
	ri := f.rankInfo(2, 0)
	assert.Equal(t, StateLive, ri.State)
	assert.Equal(t, uint64(1), ri.Violations[core.ViolationHashMismatch])
	assert.Equal(t, uint64(1), ri.Events[KindStored][OutcomeApplied], "warn mode: applied, violation in the counters")
	assert.Equal(t, uint64(1), ri.Events[KindRemoved][OutcomeRejected])
	assert.Empty(t, replays.calls())
}

func TestDegradedRankIsNotQuarantinedForLostParents(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Mode = core.ModeEnforce })
	f.addWorker(1, "m", 1)
	s := src(1, "m", 0)
	f.ix.HandleStream(s, ingest.StreamEvent{Kind: ingest.StreamGapLost, From: 1, To: 2})
	f.send(s, stored(u64p(777), tokens(1, 4), 5)) // its parent was in the gap
	ri := f.rankInfo(1, 0)
	assert.Equal(t, StateDegraded, ri.State)
	assert.Equal(t, uint64(1), ri.Events[KindStored][OutcomeRejected])
}

func TestApplyEventFromHTTPPublishers(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Mode = core.ModeEnforce })
	f.addWorker(1, "m", 2)
	local, err := f.ix.HashPrompt(tokens(1, 8), PromptOptions{})
	require.NoError(t, err)
	ev := core.Event{ID: 1, DPRank: 1, Kind: core.EventStored, Blocks: []core.StoredBlock{{BlockHash: 5, TokensHash: local[0]}, {BlockHash: 6, TokensHash: local[1]}}}
	require.NoError(t, f.ix.ApplyEvent(1, ev))
	assert.Equal(t, map[core.Worker]uint32{wk(1, 1): 2}, f.overlap("m", tokens(1, 8), PromptOptions{}))

	err = f.ix.ApplyEvent(1, core.Event{ID: 2, DPRank: 1, Kind: core.EventRemoved, BlockHashes: []uint64{42}})
	var se *core.StabilityError
	require.True(t, errors.As(err, &se))
	assert.Equal(t, core.ViolationBlockNotFound, se.Kind)
	assert.Equal(t, StateQuarantined, f.rankInfo(1, 1).State, "HTTP publishers get the same guardrails")

	assert.ErrorIs(t, f.ix.ApplyEvent(7, ev), ErrUnknownWorker)
	assert.Error(t, f.ix.ApplyEvent(1, core.Event{Kind: 9}))
	require.NoError(t, f.ix.ApplyEvent(1, core.Event{ID: 3, DPRank: 1, Kind: core.EventCleared}))
	assert.Equal(t, uint64(1), f.rankInfo(1, 1).Events[KindCleared][OutcomeApplied])
}

// The replay requester may call back into the indexer (the serve layer
// reads the worker to find its stream): it runs with no lock held.
func TestReplayRequesterMayCallBack(t *testing.T) {
	var f *fixture
	var seen RankInfo
	f = newFixture(t, func(o *Options) {
		o.Mode = core.ModeEnforce
		o.Replay = ReplayFunc(func(src ingest.Source, from uint64) error {
			seen = f.rankInfo(src.WorkerID, src.DPRank)
			return errors.New("no replay endpoint")
		})
	})
	f.addWorker(1, "m", 1)
	f.send(src(1, "m", 0), removed(5)) // block_not_found, enforced
	assert.Equal(t, StateQuarantined, seen.State)
	assert.Equal(t, 1, f.logs.count(slog.LevelWarn, "error", "no replay endpoint"))
}
