package core

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConcurrentApplyAndFindMatches runs writers (each feeding its own
// workers' events) against readers (matches, stats, dumps) on one index;
// run under -race it proves the locking. Every reader's answer must be
// well formed, the index must end consistent, and each worker must end
// with the blocks its own stream gives it, whatever the interleaving.
func TestConcurrentApplyAndFindMatches(t *testing.T) {
	const writers, opsPerWriter = 4, 2500
	streams := make([][]genOp, writers)
	var queries [][]uint64
	for k := range writers {
		g := newEventGen(uint64(100+k), smallShape)
		// Worker ids are the writer's own, so streams are independent.
		g.workers = []Worker{{ID: uint64(10 * (k + 1))}, {ID: uint64(10 * (k + 1)), DPRank: 1}, {ID: uint64(10*(k+1) + 1)}}
		g.seeds = map[Worker]uint64{}
		m := newModel()
		for range opsPerWriter {
			op := g.next(m)
			applyOp(nil, op, m)
			streams[k] = append(streams[k], op)
		}
		for range 50 {
			queries = append(queries, g.query())
		}
	}

	x := NewIndex(IndexOptions{Mode: ModeWarn})
	var done atomic.Bool
	var wg, readers sync.WaitGroup
	for k := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, op := range streams[k] {
				applyOp(x, op, nil)
			}
		}()
	}
	var reads atomic.Int64
	for r := range 3 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			buf := make([]Match, 0, 64)
			// Read until the writers are done, but no more than 20000 times:
			// the readers must not starve the writers of the two cores.
			for i := 0; (!done.Load() || i == 0) && i < 20000; i++ {
				q := queries[(i*7+r)%len(queries)]
				buf = x.AppendMatches(buf[:0], q, i%2 == 0)
				if !slices.IsSortedFunc(buf, func(a, b Match) int { return a.Worker.Compare(b.Worker) }) {
					t.Error("matches not sorted by worker")
				}
				for _, m := range buf {
					if m.Score == 0 || int(m.Score) > len(q) || m.TreeSize < uint64(m.Score) {
						t.Errorf("bad match %+v for a query of %d blocks", m, len(q))
					}
				}
				switch i % 50 {
				case 0:
					s := x.Stats()
					if !slices.IsSortedFunc(s.Workers, func(a, b WorkerStats) int { return a.Worker.Compare(b.Worker) }) {
						t.Error("stats workers not sorted")
					}
				case 25:
					_ = x.Dump()
					_ = x.Workers()
					_ = x.FindMatches(q, false)
				}
				reads.Add(1)
			}
		}()
	}
	wg.Wait()
	done.Store(true)
	readers.Wait()
	require.NoError(t, checkInvariants(x))
	t.Logf("%d reads during %d writes", reads.Load(), writers*opsPerWriter)

	seq := NewIndex(IndexOptions{Mode: ModeWarn})
	for _, s := range streams {
		for _, op := range s {
			applyOp(seq, op, nil)
		}
	}
	assert.Equal(t, seq.Workers(), x.Workers())
	blocks := func(s Stats) map[Worker]uint64 {
		out := map[Worker]uint64{}
		for _, w := range s.Workers {
			out[w.Worker] = w.Blocks
		}
		return out
	}
	assert.Equal(t, blocks(seq.Stats()), blocks(x.Stats()))
	// A dump taken now rebuilds the same answers.
	y := replay(t, x.Dump())
	for _, q := range queries {
		assert.Equal(t, x.AppendMatches(nil, q, false), y.AppendMatches(nil, q, false))
	}
}
