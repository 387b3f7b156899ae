package indexer

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/ingest"
)

// Streams of several ranks are handled while queries, registry reads and
// exports run; under -race this checks the locking, and at the end each
// rank holds exactly what its stream left.
func TestConcurrentStreamsAndQueries(t *testing.T) {
	f := newFixture(t, nil)
	const workers, rounds = 4, 200
	for id := range uint64(workers) {
		f.addWorker(id, "m", 1)
	}
	prompt := tokens(1, 64)
	var wg sync.WaitGroup
	for id := range uint64(workers) {
		wg.Go(func() {
			s := src(id, "m", 0)
			for i := range uint64(rounds) {
				base := id*1_000_000 + i*100
				b := &ingest.Batch{Seq: i, Events: []ingest.Event{
					stored(nil, prompt[:16], base+1, base+2, base+3, base+4),
					stored(u64p(base+4), prompt[16:32], base+5, base+6, base+7, base+8),
				}}
				if i > 0 {
					prev := id*1_000_000 + (i-1)*100
					b.Events = append(b.Events, removed(prev+1, prev+2, prev+3, prev+4, prev+5, prev+6, prev+7, prev+8))
				}
				f.ix.HandleBatch(s, b)
			}
		})
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 3 {
		readers.Go(func() {
			local, err := f.ix.HashPrompt(prompt, PromptOptions{})
			if !assert.NoError(t, err) {
				return
			}
			for {
				select {
				case <-stop:
					return
				default:
				}
				ov, err := f.ix.Overlaps(ModelKey{Model: "m"}, local, false)
				assert.NoError(t, err)
				for _, o := range ov {
					assert.LessOrEqual(t, o.Blocks, uint32(8))
				}
				_ = f.ix.Workers()
				_ = f.ix.Sizes()
				_ = f.ix.Export()
			}
		})
	}
	wg.Wait()
	close(stop)
	readers.Wait()

	got := f.overlap("m", prompt, PromptOptions{})
	want := map[core.Worker]uint32{}
	for id := range uint64(workers) {
		want[wk(id, 0)] = 8
		ri := f.rankInfo(id, 0)
		assert.Equal(t, uint64(8), ri.Blocks)
		require.Equal(t, uint64(rounds-1), ri.LastSeq)
	}
	assert.Equal(t, want, got)
}
