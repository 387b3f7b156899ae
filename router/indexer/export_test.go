package indexer

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
)

func TestExportRestoreRoundTrip(t *testing.T) {
	f := newFixture(t, nil)
	f.addWorker(1, "m", 2)
	_, err := f.ix.AddWorker(WorkerSpec{WorkerID: 2, Model: "m", Tenant: "acme", Endpoint: "tcp://127.0.0.1:6000", BaseURL: "http://127.0.0.1:8000", EngineHash: "auto"})
	require.NoError(t, err)
	prompt := tokens(1, 12)
	salted := stored(nil, prompt[:8], 1, 2)
	salted.ExtraKeys = [][]any{{"s"}}
	f.send(src(1, "m", 1), salted)
	f.send(src(1, "m", 1), stored(u64p(2), prompt[8:], 3))
	f.send(src(1, "m", 0), stored(nil, prompt[:4], 7))
	mm := stored(nil, tokens(50, 4), 8)
	mm.ExtraKeys = [][]any{{[]any{"img", int64(0)}}}
	f.send(src(1, "m", 0), mm)
	f.send(src(2, "m", 0), stored(nil, prompt[:8], 1, 2))

	saved := f.ix.Export()
	g := newFixture(t, nil)
	require.NoError(t, g.ix.Restore(saved))

	assert.Equal(t, saved, g.ix.Export(), "a restored indexer exports the same state")
	for _, key := range []ModelKey{{"m", ""}, {"m", "acme"}} {
		for _, po := range []PromptOptions{{}, {CacheSalt: "s"}} {
			local, err := f.ix.HashPrompt(prompt, po)
			require.NoError(t, err)
			want, err := f.ix.Overlaps(key, local, true)
			require.NoError(t, err)
			got, err := g.ix.Overlaps(key, local, true)
			require.NoError(t, err)
			assert.Equal(t, want, got, "%v %v", key, po)
		}
	}
	ri := g.rankInfo(1, 1)
	assert.True(t, ri.HaveSeq)
	assert.Equal(t, uint64(1), ri.LastSeq)

	// The restored salt and skip maps keep working for new events.
	g.seq = f.seq
	g.send(src(1, "m", 1), stored(u64p(3), tokens(200, 4), 4))
	g.send(src(1, "m", 0), stored(u64p(8), tokens(300, 4), 9))
	assert.Equal(t, map[core.Worker]uint32{wk(1, 1): 4}, g.overlap("m", append(append([]uint32{}, prompt...), tokens(200, 4)...), PromptOptions{CacheSalt: "s"}))
	assert.Equal(t, uint64(1), g.rankInfo(1, 0).Skipped[SkipParentSkipped])
	assert.Zero(t, g.rankInfo(1, 0).Violations)
}

func TestRestoreRefusesMismatches(t *testing.T) {
	f := newFixture(t, nil)
	f.addWorker(1, "m", 1)
	saved := f.ix.Export()

	g := newFixture(t, func(o *Options) { o.BlockSize = 16 })
	assert.ErrorContains(t, g.ix.Restore(saved), "block size 4")

	assert.ErrorContains(t, f.ix.Restore(saved), "already has workers")

	bad := saved
	bad.Indexes = []IndexState{{Key: ModelKey{Model: "m"}, Events: []core.RouterEvent{{WorkerID: 1, Event: core.Event{Kind: core.EventStored, ParentHash: u64p(5), Blocks: []core.StoredBlock{{BlockHash: 1}}}}}}}
	h := newFixture(t, nil)
	assert.ErrorIs(t, h.ix.Restore(bad), core.ErrEventRejected)
	assert.Empty(t, h.ix.Workers(), "a failed restore leaves the indexer empty")
}
