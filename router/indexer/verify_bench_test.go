package indexer

import (
	"testing"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/enginehash"
	"github.com/kvhash/kvhash/router/ingest"
)

// BenchmarkHandleBatchRootStores: BenchmarkHandleBatch's shape, but every
// batch is a new prompt stored from the root (a 2-block root store with
// real vLLM sha256_cbor ids), so every batch goes through the
// engine-hash verification: "verified" samples (the first 8, then 1 in
// 64, the production path), "unverified" recomputes every root store
// under every auto candidate (a rank that never verifies: the worst
// case), "off" skips it (the baseline).
func BenchmarkHandleBatchRootStores(b *testing.B) {
	const blockSize, blocksPerStore, n = 16, 2, 1024
	root, err := enginehash.VLLMRoot(enginehash.VLLMSHA256CBOR, enginehash.DefaultVLLMSeed)
	if err != nil {
		b.Fatal(err)
	}
	good := make([]ingest.Batch, n)
	for i := range good {
		toks := make([]uint32, blocksPerStore*blockSize)
		for j := range toks {
			toks[j] = uint32(i*100003 + j)
		}
		ids := make([]uint64, blocksPerStore)
		d := root
		for k := range ids {
			if d, err = enginehash.VLLMSHA256CBOR.BlockDigest(d, toks[k*blockSize:(k+1)*blockSize], nil); err != nil {
				b.Fatal(err)
			}
			ids[k] = enginehash.VLLMSHA256CBOR.WireID(d)
		}
		evs := []ingest.Event{{Kind: ingest.BlockStored, BlockHashes: ids, TokenIDs: toks, BlockSize: blockSize, Medium: "GPU"}}
		if i >= 64 {
			evs = append(evs, ingest.Event{Kind: ingest.BlockRemoved, BlockHashes: good[i-64].Events[0].BlockHashes, Medium: "GPU"})
		}
		good[i] = ingest.Batch{Events: evs}
	}
	for _, bc := range []struct {
		name, setting string
		corrupt       bool
	}{{"verified", "auto", false}, {"unverified", "auto", true}, {"off", "off", false}} {
		b.Run(bc.name, func(b *testing.B) {
			ix, err := New(Options{BlockSize: blockSize, Mode: core.ModeWarn})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := ix.AddWorker(WorkerSpec{WorkerID: 1, Model: "m", EngineHash: bc.setting}); err != nil {
				b.Fatal(err)
			}
			batches := make([]ingest.Batch, n)
			for i := range good {
				batches[i] = good[i]
				if bc.corrupt {
					ev := good[i].Events[0]
					ev.BlockHashes = append([]uint64(nil), ev.BlockHashes...)
					ev.BlockHashes[0] ^= 1
					batches[i].Events = append([]ingest.Event{ev}, good[i].Events[1:]...)
				}
			}
			s := ingest.Source{WorkerID: 1, Model: "m"}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				bt := batches[i%n]
				bt.Seq = uint64(i)
				ix.HandleBatch(s, &bt)
				i++
				if i%n == 0 { // the ring repeats: start the engine over
					ix.HandleStream(s, ingest.StreamEvent{Kind: ingest.StreamRestarted})
				}
			}
			b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "stores/s")
		})
	}
}
