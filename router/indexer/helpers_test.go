package indexer

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/ingest"
)

const testBS = 4

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// logRecorder keeps every log record's level and message.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.records = append(l.records, r.Clone())
	l.mu.Unlock()
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

// count returns how many records at level have an attribute key=value.
func (l *logRecorder) count(level slog.Level, key, value string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.records {
		if r.Level != level {
			continue
		}
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == key && a.Value.String() == value {
				n++
				return false
			}
			return true
		})
	}
	return n
}

type fixture struct {
	t     *testing.T
	ix    *Indexer
	clock *clock
	logs  *logRecorder
	seq   map[core.Worker]uint64
}

func newFixture(t *testing.T, mutate func(*Options)) *fixture {
	t.Helper()
	f := &fixture{t: t, clock: newClock(), logs: &logRecorder{}, seq: map[core.Worker]uint64{}}
	opts := Options{BlockSize: testBS, Mode: core.ModeWarn, Now: f.clock.Now, Logger: slog.New(f.logs)}
	if mutate != nil {
		mutate(&opts)
	}
	ix, err := New(opts)
	require.NoError(t, err)
	f.ix = ix
	return f
}

// addWorker registers a worker whose engine-hash verification is off:
// the fixture's engine ids are made up (verify_test.go uses real ones).
func (f *fixture) addWorker(id uint64, model string, dpSize int) {
	f.t.Helper()
	_, err := f.ix.AddWorker(WorkerSpec{WorkerID: id, Model: model, DPSize: dpSize, EngineHash: "off"})
	require.NoError(f.t, err)
}

func src(id uint64, model string, rank uint32) ingest.Source {
	return ingest.Source{WorkerID: id, Model: model, DPRank: rank, Endpoint: "tcp://127.0.0.1:5557"}
}

// send delivers one batch of events from a worker rank's stream.
func (f *fixture) send(s ingest.Source, events ...ingest.Event) {
	w := core.Worker{ID: s.WorkerID, DPRank: s.DPRank}
	seq := f.seq[w]
	f.seq[w] = seq + 1
	f.ix.HandleBatch(s, &ingest.Batch{Seq: seq, Timestamp: float64(f.clock.Now().UnixNano()) / 1e9, Events: events})
}

// tokens returns n tokens starting at first, counting up.
func tokens(first uint32, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = first + uint32(i)
	}
	return out
}

func u64p(v uint64) *uint64 { return &v }

// stored builds a vLLM BlockStored of len(hashes) full blocks at testBS.
func stored(parent *uint64, toks []uint32, hashes ...uint64) ingest.Event {
	return ingest.Event{Kind: ingest.BlockStored, BlockHashes: hashes, ParentHash: parent, TokenIDs: toks, BlockSize: testBS, Medium: "GPU"}
}

func removed(hashes ...uint64) ingest.Event {
	return ingest.Event{Kind: ingest.BlockRemoved, BlockHashes: hashes, Medium: "GPU"}
}

// overlap returns each scoring rank's matched blocks for a prompt.
func (f *fixture) overlap(model string, toks []uint32, po PromptOptions) map[core.Worker]uint32 {
	f.t.Helper()
	local, err := f.ix.HashPrompt(toks, po)
	require.NoError(f.t, err)
	ov, err := f.ix.Overlaps(ModelKey{Model: model}, local, false)
	require.NoError(f.t, err)
	out := map[core.Worker]uint32{}
	for _, o := range ov {
		out[o.Worker] = o.Blocks
	}
	return out
}

func (f *fixture) rankInfo(id uint64, rank uint32) RankInfo {
	f.t.Helper()
	wi, ok := f.ix.Worker(id)
	require.True(f.t, ok, "worker %d", id)
	for _, r := range wi.Ranks {
		if r.Worker.DPRank == rank {
			return r
		}
	}
	f.t.Fatalf("worker %d has no rank %d", id, rank)
	return RankInfo{}
}

func wk(id uint64, rank uint32) core.Worker { return core.Worker{ID: id, DPRank: rank} }
