package route

import (
	"testing"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/ingest"
	"github.com/kvhash/kvhash/router/internal/benchalt"
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

// BenchmarkRouteLongPrompt: one route and its end for a 64k-token prompt
// (4,096 blocks of 16) over 8 workers busy with 64 requests of 16k-token
// prompts (a quarter of them sharing a 4k-token prefix, which the long
// prompt starts with too), as the demo's Mooncake conversations are,
// alternated with the same for a 2k-token prompt of that prefix on the
// same router: new/old is what 32 times the prompt costs a route (its
// hashing and matching are per block; the load's bookkeeping per node of
// the active tree, active.go). With a map operation a block it was 6-8x
// the 2k-token route's cost as a whole, 0.55-1.06 ms.
func BenchmarkRouteLongPrompt(b *testing.B) {
	long, short := longPromptRouter(b)
	benchalt.Run(b, long, short)
}

// longPromptRouter returns one route and end of the long prompt and of
// the short one on a router loaded as BenchmarkRouteLongPrompt says.
func longPromptRouter(b *testing.B) (long, short func()) {
	const workers, blockSize = 8, 16
	ix, err := indexer.New(indexer.Options{BlockSize: blockSize, Mode: core.ModeWarn})
	if err != nil {
		b.Fatal(err)
	}
	for id := range uint64(workers) {
		if _, err := ix.AddWorker(indexer.WorkerSpec{WorkerID: id, Model: "m"}); err != nil {
			b.Fatal(err)
		}
	}
	r, err := New(ix, Options{Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	prompt := func(seed uint32, shared, tokens int) []uint32 {
		p := make([]uint32, tokens)
		for i := range p {
			if i < shared {
				p[i] = uint32(i)
			} else {
				p[i] = seed<<20 | uint32(i)
			}
		}
		return p
	}
	for i := range 64 {
		shared := 0
		if i%4 == 0 {
			shared = 4096
		}
		if _, err := r.Route(Request{Model: "m", TokenIDs: prompt(uint32(i+1), shared, 16384)}); err != nil {
			b.Fatal(err)
		}
	}
	once := func(tokens []uint32) func() {
		return func() {
			d, err := r.Route(Request{Model: "m", TokenIDs: tokens})
			if err != nil {
				b.Fatal(err)
			}
			r.PrefillDone(d.RequestID)
			r.Free(d.RequestID)
		}
	}
	return once(prompt(999, 4096, 65536)), once(prompt(998, 2048, 2048))
}
