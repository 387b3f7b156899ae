package indexer

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/ingest"
)

func TestStoredChainsMatchPrompts(t *testing.T) {
	f := newFixture(t, nil)
	f.addWorker(1, "m", 1)
	prompt := tokens(100, 16) // 4 blocks
	f.send(src(1, "m", 0), stored(nil, prompt[:8], 11, 12))
	f.send(src(1, "m", 0), stored(u64p(12), prompt[8:12], 13))

	assert.Equal(t, map[core.Worker]uint32{wk(1, 0): 3}, f.overlap("m", prompt, PromptOptions{}))
	assert.Equal(t, map[core.Worker]uint32{wk(1, 0): 2}, f.overlap("m", prompt[:9], PromptOptions{}), "partial blocks do not count")
	assert.Empty(t, f.overlap("m", tokens(500, 8), PromptOptions{}))

	ri := f.rankInfo(1, 0)
	assert.Equal(t, uint64(2), ri.Events[KindStored][OutcomeApplied])
	assert.Equal(t, uint64(3), ri.Blocks)
	assert.True(t, ri.HaveSeq)
	assert.Equal(t, uint64(1), ri.LastSeq)
}

func TestSaltAndLoraSeparateChains(t *testing.T) {
	prompt := tokens(7, 12)
	cases := []struct {
		name  string
		first ingest.Event // root store of blocks 0-1
		query PromptOptions
	}{
		{"sglang cache_salt key", func() ingest.Event {
			e := stored(nil, prompt[:8], 1, 2)
			e.CacheSalt = "tenant-a"
			return e
		}(), PromptOptions{CacheSalt: "tenant-a"}},
		{"vllm salt in first block's extra keys", func() ingest.Event {
			e := stored(nil, prompt[:8], 1, 2)
			e.ExtraKeys = [][]any{{"tenant-a"}, nil}
			return e
		}(), PromptOptions{CacheSalt: "tenant-a"}},
		{"vllm lora name then salt", func() ingest.Event {
			e := stored(nil, prompt[:8], 1, 2)
			e.LoraName = "adapter"
			e.ExtraKeys = [][]any{{"adapter", "tenant-a"}, {"adapter"}}
			return e
		}(), PromptOptions{LoraName: "adapter", CacheSalt: "tenant-a"}},
		{"lora only", func() ingest.Event {
			e := stored(nil, prompt[:8], 1, 2)
			e.LoraName = "adapter"
			e.ExtraKeys = [][]any{{"adapter"}, {"adapter"}}
			return e
		}(), PromptOptions{LoraName: "adapter"}},
		{"old vllm lora int id is ignored", func() ingest.Event {
			e := stored(nil, prompt[:8], 1, 2)
			e.ExtraKeys = [][]any{{int64(3)}, {int64(3)}}
			return e
		}(), PromptOptions{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			f.addWorker(1, "m", 1)
			f.send(src(1, "m", 0), tc.first)
			// The child carries neither salt nor extra keys: it inherits
			// the parent's salt (and the event names its LoRA).
			child := stored(u64p(2), prompt[8:12], 3)
			child.LoraName = tc.first.LoraName
			f.send(src(1, "m", 0), child)

			assert.Equal(t, map[core.Worker]uint32{wk(1, 0): 3}, f.overlap("m", prompt, tc.query))
			if tc.query != (PromptOptions{}) {
				assert.Empty(t, f.overlap("m", prompt, PromptOptions{}), "a plain prompt must not match")
				assert.Empty(t, f.overlap("m", prompt, PromptOptions{CacheSalt: "other", LoraName: tc.query.LoraName}))
			}
		})
	}
}

func TestSaltForgottenOnRemoveAndClear(t *testing.T) {
	f := newFixture(t, nil)
	f.addWorker(1, "m", 1)
	prompt := tokens(7, 8)
	e := stored(nil, prompt, 1, 2)
	e.CacheSalt = "s"
	f.send(src(1, "m", 0), e)
	saved := f.ix.Export()
	require.Len(t, saved.Ranks, 1)
	assert.Equal(t, []Salt{{1, "s"}, {2, "s"}}, saved.Ranks[0].Salts)

	f.send(src(1, "m", 0), removed(2))
	assert.Equal(t, []Salt{{1, "s"}}, f.ix.Export().Ranks[0].Salts)
	assert.Equal(t, map[core.Worker]uint32{wk(1, 0): 1}, f.overlap("m", prompt, PromptOptions{CacheSalt: "s"}))

	f.send(src(1, "m", 0), ingest.Event{Kind: ingest.AllBlocksCleared})
	assert.Empty(t, f.ix.Export().Ranks[0].Salts)
	assert.Empty(t, f.overlap("m", prompt, PromptOptions{CacheSalt: "s"}))
	ri := f.rankInfo(1, 0)
	assert.Equal(t, uint64(1), ri.Events[KindRemoved][OutcomeApplied])
	assert.Equal(t, uint64(1), ri.Events[KindCleared][OutcomeApplied])
	assert.Zero(t, ri.Blocks)
}

func TestSkippedBlocksByReason(t *testing.T) {
	prompt := tokens(1, 8)
	cases := []struct {
		name    string
		mutate  func(*ingest.Event)
		reason  SkipReason
		skipped uint64 // blocks
		indexed uint32 // leading blocks still matched
		opts    func(*Options)
	}{
		{"other block size", func(e *ingest.Event) { e.BlockSize = 2; e.BlockHashes = []uint64{1, 2, 3, 4} }, SkipBlockSize, 4, 0, nil},
		{"sliding window group", func(e *ingest.Event) { e.SpecKind = "sliding_window" }, SkipSpecKind, 2, 0, nil},
		{"remote", func(e *ingest.Event) { e.Locality = "REMOTE" }, SkipRemote, 2, 0, nil},
		{"placeholder", func(e *ingest.Event) { e.TokenIDs = nil; e.BlockSize = 0 }, SkipPlaceholder, 2, 0, nil},
		{"cpu medium", func(e *ingest.Event) { e.Medium = "CPU" }, SkipMedium, 2, 0, nil},
		{"token count", func(e *ingest.Event) { e.TokenIDs = e.TokenIDs[:7] }, SkipTokenCount, 2, 0, nil},
		{"multimodal second block", func(e *ingest.Event) { e.ExtraKeys = [][]any{nil, {[]any{"img-1", int64(0)}}} }, SkipMultimodal, 1, 1, nil},
		{"prompt embeds", func(e *ingest.Event) { e.ExtraKeys = [][]any{{[]byte{1, 2}}} }, SkipPromptEmbeds, 2, 0, nil},
		{"cpu configured", func(e *ingest.Event) { e.Medium = "CPU" }, 0, 0, 2, func(o *Options) { o.IndexMedia = []string{"CPU"} }},
		{"full attention named", func(e *ingest.Event) { e.SpecKind = "full_attention"; e.Locality = "LOCAL" }, 0, 0, 2, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.opts)
			f.addWorker(1, "m", 1)
			e := stored(nil, prompt, 1, 2)
			tc.mutate(&e)
			f.send(src(1, "m", 0), e)
			f.send(src(1, "m", 0), e) // a second time: counted again, warned once

			ri := f.rankInfo(1, 0)
			var want [NumSkipReasons]uint64
			if tc.skipped > 0 {
				want[tc.reason] = 2 * tc.skipped
				assert.Equal(t, 1, f.logs.count(slog.LevelWarn, "reason", tc.reason.String()), "warned once")
			}
			assert.Equal(t, want, ri.Skipped)
			got := f.overlap("m", prompt, PromptOptions{})[wk(1, 0)]
			assert.Equal(t, tc.indexed, got)
			v := ri.Violations
			v[core.ViolationDuplicateStore] = 0 // the indexed blocks, sent twice
			assert.Zero(t, v, "skips are not stability violations")
		})
	}
}

func TestChildrenAndRemovalsOfSkippedBlocks(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Mode = core.ModeEnforce })
	f.addWorker(1, "m", 1)
	prompt := tokens(1, 12)
	e := stored(nil, prompt[:8], 1, 2)
	e.ExtraKeys = [][]any{{[]any{"img", int64(1)}}}
	f.send(src(1, "m", 0), e)
	f.send(src(1, "m", 0), stored(u64p(2), prompt[8:], 3))
	f.send(src(1, "m", 0), removed(3, 2, 1))

	ri := f.rankInfo(1, 0)
	assert.Equal(t, uint64(2), ri.Skipped[SkipMultimodal])
	assert.Equal(t, uint64(1), ri.Skipped[SkipParentSkipped])
	assert.Zero(t, ri.Violations, "the chain under a skipped block is not a parent_not_found")
	assert.Equal(t, StateLive, ri.State)
	assert.Empty(t, f.ix.Export().Ranks[0].Skipped, "removals forget skipped hashes")
}

func TestDataParallelRanks(t *testing.T) {
	f := newFixture(t, nil)
	f.addWorker(1, "m", 2)
	prompt := tokens(1, 8)
	one := uint32(1)
	// The batch names rank 1 although it arrived on rank 0's stream.
	f.ix.HandleBatch(src(1, "m", 0), &ingest.Batch{DPRank: &one, Events: []ingest.Event{stored(nil, prompt, 1, 2)}})
	f.send(src(1, "m", 1), stored(nil, prompt[:4], 7))
	// A rank beyond dp_size is created on demand.
	f.send(src(1, "m", 3), stored(nil, prompt[:4], 9))

	assert.Equal(t, map[core.Worker]uint32{wk(1, 1): 2, wk(1, 3): 1}, f.overlap("m", prompt, PromptOptions{}))
	cands, err := f.ix.Candidates(ModelKey{Model: "m"})
	require.NoError(t, err)
	assert.Equal(t, []Candidate{{Worker: wk(1, 0)}, {Worker: wk(1, 1)}, {Worker: wk(1, 3)}}, cands)
}

func TestModelsAreIsolated(t *testing.T) {
	f := newFixture(t, nil)
	f.addWorker(1, "llama", 1)
	f.addWorker(2, "qwen", 1)
	_, err := f.ix.AddWorker(WorkerSpec{WorkerID: 3, Model: "llama", Tenant: "acme"})
	require.NoError(t, err)
	prompt := tokens(1, 8)
	f.send(src(1, "llama", 0), stored(nil, prompt, 1, 2))

	assert.Equal(t, map[core.Worker]uint32{wk(1, 0): 2}, f.overlap("llama", prompt, PromptOptions{}))
	assert.Empty(t, f.overlap("qwen", prompt, PromptOptions{}))
	local, err := f.ix.HashPrompt(prompt, PromptOptions{})
	require.NoError(t, err)
	ov, err := f.ix.Overlaps(ModelKey{Model: "llama", Tenant: "acme"}, local, true)
	require.NoError(t, err)
	assert.Empty(t, ov, "another tenant's index")
	_, err = f.ix.Overlaps(ModelKey{Model: "mistral"}, local, false)
	assert.ErrorIs(t, err, ErrUnknownModel)
	assert.Equal(t, []ModelKey{{"llama", ""}, {"llama", "acme"}, {"qwen", ""}}, f.ix.Models())

	sizes := f.ix.Sizes()
	require.Len(t, sizes, 3)
	assert.Equal(t, IndexSize{Key: ModelKey{"llama", ""}, Nodes: 2, Pairs: 2}, sizes[0])

	// Moving a worker to another model takes its blocks out of the first.
	_, err = f.ix.AddWorker(WorkerSpec{WorkerID: 1, Model: "qwen"})
	require.NoError(t, err)
	assert.Empty(t, f.overlap("qwen", prompt, PromptOptions{}))
	assert.True(t, f.ix.RemoveWorker(1))
	assert.False(t, f.ix.RemoveWorker(1))
}

func TestRestartClearsTheRank(t *testing.T) {
	f := newFixture(t, nil)
	f.addWorker(1, "m", 1)
	prompt := tokens(1, 8)
	f.send(src(1, "m", 0), stored(nil, prompt, 1, 2))
	f.ix.HandleStream(src(1, "m", 0), ingest.StreamEvent{Kind: ingest.StreamRestarted})
	f.seq[wk(1, 0)] = 0 // the new process counts from 0
	assert.Empty(t, f.overlap("m", prompt, PromptOptions{}))
	f.send(src(1, "m", 0), stored(nil, prompt[:4], 5))
	assert.Equal(t, map[core.Worker]uint32{wk(1, 0): 1}, f.overlap("m", prompt, PromptOptions{}))
	ri := f.rankInfo(1, 0)
	assert.Equal(t, uint64(1), ri.Restarts)
	assert.Equal(t, StateLive, ri.State)
}

func TestGapLostDegradesUntilRebuilt(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.DegradedSettle = 10e9 })
	f.addWorker(1, "m", 1)
	prompt := tokens(1, 8)
	s := src(1, "m", 0)
	f.send(s, stored(nil, prompt, 1, 2))
	f.ix.HandleStream(s, ingest.StreamEvent{Kind: ingest.StreamGapLost, From: 5, To: 9})

	ri := f.rankInfo(1, 0)
	assert.Equal(t, StateDegraded, ri.State)
	assert.Contains(t, ri.Reason, "[5, 9)")
	assert.Equal(t, uint64(1), ri.Gaps)
	assert.Zero(t, ri.Blocks, "cleared")

	// New stores are applied but not scored before the settle time.
	f.send(s, stored(nil, prompt, 1, 2))
	assert.Empty(t, f.overlap("m", prompt, PromptOptions{}))
	local, _ := f.ix.HashPrompt(prompt, PromptOptions{})
	all, err := f.ix.Overlaps(ModelKey{Model: "m"}, local, true)
	require.NoError(t, err)
	assert.Len(t, all, 1, "the index has them")
	cands, _ := f.ix.Candidates(ModelKey{Model: "m"})
	assert.Equal(t, []Candidate{{Worker: wk(1, 0), State: StateDegraded}}, cands, "still a candidate, by load")

	f.clock.Advance(11e9)
	f.send(s, removed(2))
	assert.Equal(t, StateLive, f.rankInfo(1, 0).State)
	assert.Equal(t, map[core.Worker]uint32{wk(1, 0): 1}, f.overlap("m", prompt, PromptOptions{}))

	// A clear ends degradation at once.
	f.ix.HandleStream(s, ingest.StreamEvent{Kind: ingest.StreamGapLost, From: 20, To: 21})
	require.Equal(t, StateDegraded, f.rankInfo(1, 0).State)
	f.send(s, ingest.Event{Kind: ingest.AllBlocksCleared})
	assert.Equal(t, StateLive, f.rankInfo(1, 0).State)
}

func TestStreamEventsAreCounted(t *testing.T) {
	f := newFixture(t, nil)
	f.addWorker(1, "m", 1)
	s := src(1, "m", 0)
	f.ix.HandleStream(s, ingest.StreamEvent{Kind: ingest.StreamConnected})
	assert.True(t, f.rankInfo(1, 0).Connected)
	f.ix.HandleStream(s, ingest.StreamEvent{Kind: ingest.StreamMalformed})
	f.ix.HandleStream(s, ingest.StreamEvent{Kind: ingest.StreamGapReplayed, From: 1, To: 3})
	f.ix.HandleStream(s, ingest.StreamEvent{Kind: ingest.StreamDisconnected})
	ri := f.rankInfo(1, 0)
	assert.False(t, ri.Connected)
	assert.Equal(t, uint64(1), ri.Malformed)
	assert.Equal(t, uint64(1), ri.Replayed)
}

func TestUnknownSourceRegistersItsWorker(t *testing.T) {
	f := newFixture(t, nil)
	f.send(src(9, "m", 0), stored(nil, tokens(1, 4), 1))
	wi, ok := f.ix.Worker(9)
	require.True(t, ok)
	assert.Equal(t, "m", wi.Spec.Model)
	assert.Equal(t, map[core.Worker]uint32{wk(9, 0): 1}, f.overlap("m", tokens(1, 4), PromptOptions{}))
}

func TestLagFromTheEngineTimestamp(t *testing.T) {
	f := newFixture(t, nil)
	f.addWorker(1, "m", 1)
	ts := float64(f.clock.Now().Add(-1500e6).UnixNano()) / 1e9
	f.ix.HandleBatch(src(1, "m", 0), &ingest.Batch{Seq: 4, Timestamp: ts})
	ri := f.rankInfo(1, 0)
	assert.InDelta(t, 1.5, ri.LagSeconds, 0.01)
	assert.Equal(t, f.clock.Now(), ri.LastEventAt)
}

func TestUnhealthyWorkersAreNotCandidates(t *testing.T) {
	f := newFixture(t, nil)
	f.addWorker(1, "m", 1)
	f.addWorker(2, "m", 1)
	require.NoError(t, f.ix.SetHealthy(2, false))
	cands, err := f.ix.Candidates(ModelKey{Model: "m"})
	require.NoError(t, err)
	assert.Equal(t, []Candidate{{Worker: wk(1, 0)}}, cands)
	assert.ErrorIs(t, f.ix.SetHealthy(3, false), ErrUnknownWorker)
}

func TestRanksRemovedAndShrunk(t *testing.T) {
	f := newFixture(t, nil)
	f.addWorker(1, "m", 3)
	prompt := tokens(1, 4)
	for r := range uint32(3) {
		f.send(src(1, "m", r), stored(nil, prompt, uint64(10+r)))
	}
	f.send(src(1, "m", 5), stored(nil, prompt, 15)) // a rank the engine named beyond dp_size
	assert.True(t, f.ix.RemoveRank(1, 1))
	assert.False(t, f.ix.RemoveRank(1, 1))
	assert.False(t, f.ix.RemoveRank(2, 0))
	assert.Equal(t, map[core.Worker]uint32{wk(1, 0): 1, wk(1, 2): 1, wk(1, 5): 1}, f.overlap("m", prompt, PromptOptions{}))

	_, err := f.ix.AddWorker(WorkerSpec{WorkerID: 1, Model: "m", DPSize: 1})
	require.NoError(t, err)
	assert.Equal(t, map[core.Worker]uint32{wk(1, 0): 1, wk(1, 5): 1}, f.overlap("m", prompt, PromptOptions{}))
	cands, err := f.ix.Candidates(ModelKey{Model: "m"})
	require.NoError(t, err)
	assert.Equal(t, []Candidate{{Worker: wk(1, 0)}, {Worker: wk(1, 5)}}, cands)
	wi, _ := f.ix.Worker(1)
	assert.Len(t, wi.Ranks, 2)
}

func TestStreamEventsFollowTheRankBatchesName(t *testing.T) {
	f := newFixture(t, nil)
	f.addWorker(1, "m", 1)
	prompt := tokens(1, 4)
	global := uint32(6) // the engine numbers its ranks fleet-wide
	f.ix.HandleBatch(src(1, "m", 0), &ingest.Batch{DPRank: &global, Events: []ingest.Event{stored(nil, prompt, 1)}})
	require.Equal(t, map[core.Worker]uint32{wk(1, 6): 1}, f.overlap("m", prompt, PromptOptions{}))
	f.ix.HandleStream(src(1, "m", 0), ingest.StreamEvent{Kind: ingest.StreamGapLost, From: 1, To: 2})
	assert.Equal(t, StateDegraded, f.rankInfo(1, 6).State)
	assert.Equal(t, StateLive, f.rankInfo(1, 0).State)
	assert.Zero(t, f.rankInfo(1, 6).Blocks)
	assert.Equal(t, uint32(0), f.rankInfo(1, 6).StreamRank, "its seq is stream 0's")
	saved := f.ix.Export()
	assert.Equal(t, RankState{Worker: wk(1, 6), HaveSeq: true, StreamRank: 0}, saved.Ranks[1])
	assert.Equal(t, uint32(0), saved.Ranks[0].StreamRank)
}

func TestJoiningAStreamMidwayDegrades(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Mode = core.ModeEnforce; o.DegradedSettle = time.Second })
	f.addWorker(1, "m", 1)
	s := src(1, "m", 0)
	f.ix.HandleBatch(s, &ingest.Batch{Seq: 900, Events: []ingest.Event{stored(u64p(5), tokens(1, 4), 6)}})
	ri := f.rankInfo(1, 0)
	assert.Equal(t, StateDegraded, ri.State, "not quarantined: its parent was stored before the router listened")
	assert.Contains(t, ri.Reason, "seq 900")
	f.clock.Advance(2 * time.Second)
	f.ix.HandleBatch(s, &ingest.Batch{Seq: 901, Events: []ingest.Event{stored(nil, tokens(1, 4), 7)}})
	assert.Equal(t, StateLive, f.rankInfo(1, 0).State)

	// A stream that starts at 0 is exact from the start.
	f.addWorker(2, "m", 1)
	f.ix.HandleBatch(src(2, "m", 0), &ingest.Batch{Seq: 0, Events: []ingest.Event{stored(nil, tokens(500, 4), 8)}})
	assert.Equal(t, StateLive, f.rankInfo(2, 0).State)
}
