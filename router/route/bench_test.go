package route

import (
	"testing"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/ingest"
)

// BenchmarkRoute: one route (hash, match, cost over every candidate,
// record the load) over 128 workers, each caching a different share of
// a 1024-token system prompt, with 16-token blocks, by each cost model
// (ttft: the predicted TTFT, the service's default; dynamo: Dynamo's
// cost). Each iteration marks its request's prefill done (one observation
// of the TTFT model) and frees it so the load stays steady.
func BenchmarkRoute(b *testing.B) {
	for _, cost := range []string{CostTTFT, CostDynamo} {
		b.Run(cost, func(b *testing.B) { benchmarkRoute(b, cost) })
	}
}

func benchmarkRoute(b *testing.B, cost string) {
	const workers, blockSize, promptTokens = 128, 16, 2048
	ix, err := indexer.New(indexer.Options{BlockSize: blockSize, Mode: core.ModeWarn})
	if err != nil {
		b.Fatal(err)
	}
	system := make([]uint32, promptTokens)
	for i := range system {
		system[i] = uint32(i*7 + 3)
	}
	for id := range uint64(workers) {
		if _, err := ix.AddWorker(indexer.WorkerSpec{WorkerID: id, Model: "m"}); err != nil {
			b.Fatal(err)
		}
		n := int(id%64) + 1 // worker i caches the first i%64+1 blocks
		hashes := make([]uint64, n)
		for i := range hashes {
			hashes[i] = id<<32 | uint64(i+1)
		}
		ix.HandleBatch(ingest.Source{WorkerID: id, Model: "m"}, &ingest.Batch{Events: []ingest.Event{{
			Kind: ingest.BlockStored, BlockHashes: hashes, TokenIDs: system[:n*blockSize], BlockSize: blockSize,
		}}})
	}
	p := DefaultParams()
	p.Cost = cost
	r, err := New(ix, Options{Seed: 1, Params: &p})
	if err != nil {
		b.Fatal(err)
	}
	// 64 requests stay active throughout, as a busy fleet has.
	for i := range 64 {
		prompt := append(append([]uint32{}, system[:1024]...), uint32(i))
		if _, err := r.Route(Request{Model: "m", TokenIDs: prompt}); err != nil {
			b.Fatal(err)
		}
	}
	prompt := system[:promptTokens]
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		d, err := r.Route(Request{Model: "m", TokenIDs: prompt})
		if err != nil {
			b.Fatal(err)
		}
		r.PrefillDone(d.RequestID)
		r.Free(d.RequestID)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "routes/s")
}
