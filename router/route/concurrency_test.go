package route

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kvhash/kvhash/router/ingest"
)

// Routes, prefill-done and frees run while engine events stream in; under
// -race this checks the router and indexer locking together, and at the
// end no load is left behind.
func TestConcurrentRoutesDuringIngestion(t *testing.T) {
	f := newFixture(t, 4, Options{})
	prompt := tokens(1, 64)
	var wg sync.WaitGroup
	for id := range uint64(4) {
		wg.Go(func() {
			s := ingest.Source{WorkerID: id, Model: "m"}
			for i := range uint64(300) {
				h := id<<40 | i<<8
				b := &ingest.Batch{Seq: i, Events: []ingest.Event{{
					Kind: ingest.BlockStored, BlockHashes: []uint64{h + 1, h + 2, h + 3, h + 4},
					TokenIDs: prompt[:16], BlockSize: bs,
				}}}
				if i > 0 {
					p := id<<40 | (i-1)<<8
					b.Events = append(b.Events, ingest.Event{Kind: ingest.BlockRemoved, BlockHashes: []uint64{p + 1, p + 2, p + 3, p + 4}})
				}
				f.ix.HandleBatch(s, b)
			}
		})
	}
	for range 3 {
		wg.Go(func() {
			for range 300 {
				d, err := f.r.Route(Request{Model: "m", TokenIDs: prompt})
				if !assert.NoError(t, err) {
					return
				}
				assert.Len(t, d.Candidates, 4)
				assert.LessOrEqual(t, d.OverlapBlocks, uint32(4))
				assert.True(t, f.r.PrefillDone(d.RequestID))
				_ = f.r.Stats()
				assert.True(t, f.r.Free(d.RequestID))
			}
		})
	}
	wg.Wait()
	st := f.r.Stats()
	assert.Zero(t, st.ActiveRequests)
	assert.Empty(t, st.Workers)
}
