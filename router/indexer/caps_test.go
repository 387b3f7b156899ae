package indexer

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/ingest"
)

// Issue 24 item 4: what events from outside can make the router keep is
// bounded; each refusal is counted.

func ranksOf(t *testing.T, ix *Indexer, id uint64) []uint32 {
	t.Helper()
	wi, ok := ix.Worker(id)
	require.True(t, ok)
	var out []uint32
	for _, r := range wi.Ranks {
		out = append(out, r.Worker.DPRank)
	}
	return out
}

// Twenty large stores from an engine stream cannot take a rank beyond
// its bound: the stores beyond it are refused whole and counted, the
// index stays bounded, and removals make room again.
func TestStreamStoresBeyondTheRankBoundAreRefused(t *testing.T) {
	const limit, perStore, posts = 10, 3, 20
	f := newFixture(t, func(o *Options) { o.MaxRankBlocks = limit })
	f.addWorker(1, "m", 1)
	for i := range uint64(posts) {
		f.send(src(1, "m", 0), stored(nil, tokens(uint32(1000*i), perStore*testBS), 100*i+1, 100*i+2, 100*i+3))
	}
	ri := f.rankInfo(1, 0)
	accepted := limit / perStore
	assert.Equal(t, uint64(accepted*perStore), ri.Blocks)
	assert.Equal(t, uint64((posts-accepted)*perStore), ri.Skipped[SkipRankFull])
	assert.Equal(t, uint64(posts-accepted), ri.Events[KindStored][OutcomeSkipped])
	assert.Equal(t, uint64(posts-accepted), f.ix.Refused()[RefusedRankFull])
	for _, sz := range f.ix.Sizes() {
		assert.LessOrEqual(t, sz.Pairs, uint64(limit), "the index is bounded")
	}
	assert.Zero(t, ri.Violations, "nothing refused is a stability violation")
	// One warning per kind, not one per refused store.
	assert.LessOrEqual(t, f.logs.count(slog.LevelWarn, "reason", "rank_full"), 2)

	// A child of a refused store is skipped, not core's parent_not_found
	// (the first refused stores' hashes are remembered, up to the bound).
	f.send(src(1, "m", 0), stored(u64p(303), tokens(50_000, testBS), 304))
	ri = f.rankInfo(1, 0)
	assert.Equal(t, uint64(1), ri.Skipped[SkipParentSkipped])
	assert.Zero(t, ri.Violations)

	// Removing blocks makes room: the next store is applied.
	f.send(src(1, "m", 0), removed(1, 2, 3))
	f.send(src(1, "m", 0), stored(nil, tokens(70_000, 2*testBS), 7001, 7002))
	assert.Equal(t, uint64(accepted*perStore-3+2), f.rankInfo(1, 0).Blocks)
	// A clear empties the rank: its bound starts over.
	f.send(src(1, "m", 0), ingest.Event{Kind: ingest.AllBlocksCleared})
	f.send(src(1, "m", 0), stored(nil, tokens(80_000, 3*testBS), 8001, 8002, 8003))
	assert.Equal(t, uint64(3), f.rankInfo(1, 0).Blocks)
}

// The hashes of blocks not indexed are remembered up to the same bound.
func TestSkippedHashesAreBounded(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.MaxRankBlocks = 5 })
	f.addWorker(1, "m", 1)
	for i := range uint64(10) {
		e := stored(nil, tokens(uint32(100*i), 2*testBS), 10*i+1, 10*i+2)
		e.BlockSize = testBS * 2 // another block size: skipped
		e.TokenIDs = tokens(uint32(100*i), 4*testBS)
		f.send(src(1, "m", 0), e)
	}
	assert.Equal(t, uint64(20), f.rankInfo(1, 0).Skipped[SkipBlockSize])
	assert.Len(t, f.ix.Export().Ranks[0].Skipped, 5)
}

// POST /v1/events' events: CheckEvents refuses a request beyond the bound
// before any of it applies; ApplyEvent refuses a store beyond it.
func TestHTTPEventsBeyondTheRankBound(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.MaxRankBlocks = 4 })
	f.addWorker(1, "m", 1)
	store := func(id uint64, hashes ...uint64) core.Event {
		ev := core.Event{ID: id, Kind: core.EventStored}
		for _, h := range hashes {
			ev.Blocks = append(ev.Blocks, core.StoredBlock{BlockHash: h, TokensHash: h + 1000})
		}
		return ev
	}
	cases := []struct {
		name    string
		evs     []core.Event
		wantErr error
	}{
		{"within the bound", []core.Event{store(1, 1, 2), store(2, 3)}, nil},
		{"one store too many", []core.Event{store(3, 4), store(4, 5)}, ErrRankFull},
		{"one store too large", []core.Event{store(5, 10, 11, 12, 13, 14)}, ErrRankFull},
		{"removals first are not credited", []core.Event{{ID: 6, Kind: core.EventRemoved, BlockHashes: []uint64{1}}, store(7, 20, 21)}, ErrRankFull},
		{"exactly to the bound", []core.Event{store(8, 30)}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := f.ix.CheckEvents(1, tc.evs)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			for _, ev := range tc.evs {
				require.NoError(t, f.ix.ApplyEvent(1, ev))
			}
		})
	}
	assert.Equal(t, uint64(4), f.rankInfo(1, 0).Blocks)
	err := f.ix.ApplyEvent(1, store(9, 40))
	require.ErrorIs(t, err, ErrRankFull)
	assert.Equal(t, uint64(4), f.rankInfo(1, 0).Blocks)
	assert.Equal(t, uint64(1), f.rankInfo(1, 0).Skipped[SkipRankFull])
	assert.Equal(t, uint64(2+1+2+1), f.ix.Refused()[RefusedRankFull], "each refused request's events, then the one store")
}

// A dp_rank beyond the worker's dp_size creates no rank: refused from
// HTTP; from an engine stream, dp_size more ranks are allowed (engines
// numbering their ranks fleet-wide), no more.
func TestDPRankBeyondTheWorkersRanks(t *testing.T) {
	prompt := tokens(1, testBS)
	cases := []struct {
		name      string
		dpSize    int
		run       func(f *fixture) error
		wantErr   error
		wantRanks []uint32
		refused   uint64
	}{
		{"HTTP event, rank 2000 of dp_size 2", 2, func(f *fixture) error {
			return f.ix.ApplyEvent(1, core.Event{ID: 1, Kind: core.EventCleared, DPRank: 2000})
		}, ErrRankOutOfRange, []uint32{0, 1}, 1},
		{"HTTP events checked before any applies", 2, func(f *fixture) error {
			return f.ix.CheckEvents(1, []core.Event{{ID: 1, Kind: core.EventCleared, DPRank: 1}, {ID: 2, Kind: core.EventCleared, DPRank: 2}})
		}, ErrRankOutOfRange, []uint32{0, 1}, 2},
		{"HTTP event within dp_size", 2, func(f *fixture) error {
			return f.ix.ApplyEvent(1, core.Event{ID: 1, Kind: core.EventCleared, DPRank: 1})
		}, nil, []uint32{0, 1}, 0},
		{"stream names ranks 0..2000", 1, func(f *fixture) error {
			for rank := range uint32(2001) {
				f.ix.HandleBatch(src(1, "m", 0), &ingest.Batch{Seq: uint64(rank), DPRank: &rank, Events: []ingest.Event{stored(nil, prompt, uint64(rank)+1)}})
			}
			return nil
		}, nil, []uint32{0, 1}, 1999},
		{"a fleet-wide rank per stream", 2, func(f *fixture) error {
			for i, rank := range []uint32{6, 7, 8} {
				f.ix.HandleBatch(src(1, "m", uint32(i%2)), &ingest.Batch{DPRank: &rank, Events: []ingest.Event{stored(nil, prompt, 9)}})
			}
			return nil
		}, nil, []uint32{0, 1, 6, 7}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			f.addWorker(1, "m", tc.dpSize)
			err := tc.run(f)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				assert.ErrorContains(t, err, "dp_size")
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.wantRanks, ranksOf(t, f.ix, 1))
			assert.Equal(t, tc.refused, f.ix.Refused()[RefusedRankRange])
		})
	}
}

// A refused rank is not remembered as the stream's: the stream's gap goes
// to the rank it last named that was accepted.
func TestARefusedRankIsNotTheStreams(t *testing.T) {
	f := newFixture(t, nil)
	f.addWorker(1, "m", 1)
	six, nine := uint32(6), uint32(9)
	f.ix.HandleBatch(src(1, "m", 0), &ingest.Batch{DPRank: &six, Events: []ingest.Event{stored(nil, tokens(1, testBS), 1)}})
	f.ix.HandleBatch(src(1, "m", 0), &ingest.Batch{Seq: 1, DPRank: &nine, Events: []ingest.Event{stored(nil, tokens(1, testBS), 2)}})
	f.ix.HandleStream(src(1, "m", 0), ingest.StreamEvent{Kind: ingest.StreamGapLost, From: 2, To: 3})
	assert.Equal(t, StateDegraded, f.rankInfo(1, 6).State)
	assert.Equal(t, []uint32{0, 6}, ranksOf(t, f.ix, 1))
}

func TestLabelsAreBounded(t *testing.T) {
	big := strings.Repeat("m", 2<<20)
	cases := []struct {
		name    string
		spec    WorkerSpec
		wantErr string
	}{
		{"a 2 MB model", WorkerSpec{WorkerID: 1, Model: big}, "model is 2097152 bytes long"},
		{"a model at the bound", WorkerSpec{WorkerID: 1, Model: strings.Repeat("m", MaxLabelBytes)}, ""},
		{"a model one byte over", WorkerSpec{WorkerID: 1, Model: strings.Repeat("m", MaxLabelBytes+1)}, "at most 256"},
		{"a tenant not UTF-8", WorkerSpec{WorkerID: 1, Model: "m", Tenant: "a\xffb"}, "tenant is not valid UTF-8"},
		{"a long topic", WorkerSpec{WorkerID: 1, Model: "m", Topic: strings.Repeat("t", MaxTopicBytes+1)}, "topic"},
		{"a UTF-8 model", WorkerSpec{WorkerID: 1, Model: "模型-7b"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			_, err := f.ix.AddWorker(tc.spec)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalidWorker)
			require.ErrorIs(t, err, ErrInvalidLabel)
			assert.ErrorContains(t, err, tc.wantErr)
			assert.Empty(t, f.ix.Workers())
			assert.Less(t, len(err.Error()), 300, "the error does not repeat the value")
		})
	}
}

// A stream whose worker would be registered with a 2 MB model name (a
// bound endpoint's topic) registers nothing; its events are counted.
func TestAStreamCannotRegisterABadLabel(t *testing.T) {
	f := newFixture(t, nil)
	big := strings.Repeat("m", 2<<20)
	f.ix.HandleBatch(ingest.Source{WorkerID: 5, Model: big, Topic: "kv@10.0.0.1:80@" + big[:10]},
		&ingest.Batch{Events: []ingest.Event{stored(nil, tokens(1, testBS), 1), stored(nil, tokens(9, testBS), 2)}})
	assert.Empty(t, f.ix.Workers())
	assert.Empty(t, f.ix.Models())
	assert.Equal(t, uint64(2), f.ix.Refused()[RefusedLabel])
	f.logs.mu.Lock()
	defer f.logs.mu.Unlock()
	for _, r := range f.logs.records {
		r.Attrs(func(a slog.Attr) bool {
			assert.Less(t, len(a.Value.String()), 1024, "log attribute %s", a.Key)
			return true
		})
	}
}
