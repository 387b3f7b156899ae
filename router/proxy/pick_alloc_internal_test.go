package proxy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/route"
)

// A routing decision allocates next to nothing: while the collector marks,
// an allocation may make its goroutine assist it or end the mark phase,
// and wait (under a saturated CPU, milliseconds). So what a decision
// keeps comes from reused memory (the candidates, the request's record
// and blocks); what is left is the request's name. Counted, not timed.
func TestPickAllocatesAlmostNothing(t *testing.T) {
	ix, err := indexer.New(indexer.Options{BlockSize: 4})
	require.NoError(t, err)
	for i := range 4 {
		_, err = ix.AddWorker(indexer.WorkerSpec{WorkerID: uint64(i + 1), Model: "m", BaseURL: "http://127.0.0.1:1"})
		require.NoError(t, err)
	}
	rt, err := route.New(ix, route.Options{})
	require.NoError(t, err)
	p, err := New(Options{Indexer: ix, Router: rt, HealthInterval: -1, EngineSlots: 1 << 20})
	require.NoError(t, err)
	tokens := make([]uint32, 64)
	for i := range tokens {
		tokens[i] = uint32(i)
	}
	req := clientRequest{Model: "m"}
	for _, tc := range []struct {
		pol Policy
		max float64 // allocations a decision
	}{
		{PolicyKV, 2}, // the name "kvr-N" (and its digits)
		{PolicyRoundRobin, 0},
		{PolicyLeastLoaded, 0},
	} {
		t.Run(string(tc.pol), func(t *testing.T) {
			allocs := testing.AllocsPerRun(200, func() {
				tg, err := p.pick(tc.pol, req, tokens)
				if err != nil {
					panic(err)
				}
				p.release(tg)
			})
			assert.LessOrEqual(t, allocs, tc.max, "allocations a decision (and its release)")
		})
	}
}
