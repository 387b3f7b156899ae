package eventplane

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/ingest"
)

// TestApplyOncePerEngineSeq: what a leadership change can put on the
// stream twice (a batch, a lost gap) is applied once; a restart starts
// the seqs over.
func TestApplyOncePerEngineSeq(t *testing.T) {
	ix, err := indexer.New(indexer.Options{BlockSize: testBlockSize})
	require.NoError(t, err)
	p := &Plane{ix: ix, seqs: map[seqKey]seqState{}, log: slog.New(slog.DiscardHandler)}
	src := ingest.Source{Model: "m", WorkerID: 1}
	other := ingest.Source{Model: "m", WorkerID: 1, DPRank: 1}
	batch := func(s ingest.Source, seq uint64) Message {
		return Message{Source: s, Batch: &ingest.Batch{Seq: seq}}
	}
	stream := func(k ingest.StreamEventKind, from, to uint64) Message {
		return Message{Source: src, Stream: &ingest.StreamEvent{Kind: k, From: from, To: to}}
	}
	steps := []struct {
		name    string
		msg     Message
		applied bool
	}{
		{"first batch", batch(src, 0), true},
		{"next", batch(src, 1), true},
		{"the old holder's late copy", batch(src, 1), false},
		{"another rank has its own seqs", batch(other, 1), true},
		{"a lost gap", stream(ingest.StreamGapLost, 2, 5), true},
		{"the same gap from the next holder", stream(ingest.StreamGapLost, 2, 5), false},
		{"a batch inside the lost gap", batch(src, 3), false},
		{"after the gap", batch(src, 5), true},
		{"restart", stream(ingest.StreamRestarted, 0, 0), true},
		{"the new process's seq 0", batch(src, 0), true},
		{"its seq 0 again", batch(src, 0), false},
		{"connection news always applies", stream(ingest.StreamConnected, 0, 0), true},
	}
	for _, s := range steps {
		before := p.stats.Applied.Load()
		p.applyLocked(s.msg)
		assert.Equal(t, s.applied, p.stats.Applied.Load() == before+1, s.name)
	}
	assert.Equal(t, map[uint32]uint64{0: 0, 1: 1}, p.resumeAfter(1))
	assert.Equal(t, uint64(4), p.stats.Duplicates.Load())
}

func TestSeqsOfASnapshotResumeEachStream(t *testing.T) {
	saved := indexer.Saved{Ranks: []indexer.RankState{
		{HaveSeq: true, LastSeq: 9, StreamRank: 0},
		{HaveSeq: false, LastSeq: 4, StreamRank: 1},
		{HaveSeq: true, LastSeq: 3, StreamRank: 2},
		{HaveSeq: true, LastSeq: 7, StreamRank: 2}, // engines numbering ranks globally: two ranks on one stream
	}}
	for i := range saved.Ranks {
		saved.Ranks[i].Worker.ID = 5
	}
	assert.Equal(t, map[seqKey]seqState{{5, 0}: {true, 9}, {5, 2}: {true, 7}}, seqsOf(saved))
}
