package indexer

import (
	"testing"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/ingest"
)

// BenchmarkHandleBatch: engine batches already decoded (ingest's work is
// not timed) through the indexer: hashing the token ids with core,
// translating, applying to the index, counting. Each batch is what a busy
// vLLM rank sends in one step: a new 512-token prompt stored as 32
// 16-token blocks (a 256-token shared system prefix it already holds, and
// a fresh tail chained under it) and the eviction of an older prompt's
// tail. blocks/s counts stored and removed blocks.
func BenchmarkHandleBatch(b *testing.B) {
	const blockSize, prefixBlocks, tailBlocks, window = 16, 16, 16, 64
	ix, err := New(Options{BlockSize: blockSize, Mode: core.ModeWarn})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := ix.AddWorker(WorkerSpec{WorkerID: 1, Model: "m"}); err != nil {
		b.Fatal(err)
	}
	s := ingest.Source{WorkerID: 1, Model: "m"}
	system := make([]uint32, prefixBlocks*blockSize)
	for i := range system {
		system[i] = uint32(i*31 + 7)
	}
	prefixHashes := make([]uint64, prefixBlocks)
	for i := range prefixHashes {
		prefixHashes[i] = 1<<62 | uint64(i)
	}
	ix.HandleBatch(s, &ingest.Batch{Events: []ingest.Event{{
		Kind: ingest.BlockStored, BlockHashes: prefixHashes, TokenIDs: system, BlockSize: blockSize, Medium: "GPU",
	}}})
	parent := prefixHashes[prefixBlocks-1]

	// Prebuilt batches: prompt i stores its tail; from prompt window on,
	// prompt i-window's tail is evicted in the same batch.
	const n = 4096
	batches := make([]ingest.Batch, n)
	tails := make([][]uint64, n)
	for i := range batches {
		toks := make([]uint32, tailBlocks*blockSize)
		for j := range toks {
			toks[j] = uint32(i*100003 + j)
		}
		tails[i] = make([]uint64, tailBlocks)
		for j := range tails[i] {
			tails[i][j] = uint64(i)<<20 | uint64(j)
		}
		evs := []ingest.Event{{
			Kind: ingest.BlockStored, BlockHashes: tails[i], ParentHash: &parent,
			TokenIDs: toks, BlockSize: blockSize, Medium: "GPU",
		}}
		batches[i] = ingest.Batch{Seq: uint64(i), Events: evs}
	}
	b.ReportAllocs()
	b.ResetTimer()
	blocks := 0
	i := 0
	for b.Loop() {
		k := i % n
		bt := batches[k]
		if i >= window {
			// Evict the tail stored window batches ago (recycled: the ring
			// of prebuilt batches repeats, so old names come back).
			old := (i - window) % n
			bt.Events = append(bt.Events[:1:1], ingest.Event{Kind: ingest.BlockRemoved, BlockHashes: tails[old], Medium: "GPU"})
			blocks += tailBlocks
		}
		bt.Seq = uint64(i)
		ix.HandleBatch(s, &bt)
		blocks += tailBlocks
		i++
	}
	b.ReportMetric(float64(blocks)/b.Elapsed().Seconds(), "blocks/s")
	ri, _ := ix.Worker(1)
	if v := ri.Ranks[0].Violations; v != ([core.NumViolations]uint64{}) {
		b.Fatalf("the benchmark stream is not clean: %v", v)
	}
}
