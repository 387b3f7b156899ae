package eventplane

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/ingest"
	"github.com/kvhash/kvhash/router/ingest/ingesttest"
	"github.com/kvhash/kvhash/router/snapshot"
)

// applyRateBatches are engine batches (8 stores of 16 blocks, as vLLM's
// steps under load) of 4 engines, decoded and encoded for the stream.
func applyRateBatches(tb testing.TB, perEngine int) (srcs []ingest.Source, batches []*ingest.Batch, wire [][]byte) {
	tb.Helper()
	for w := uint64(1); w <= 4; w++ {
		spec := ingesttest.DefaultSpec(ingesttest.MapEvents)
		spec.Seed = w
		gen := ingesttest.NewGenerator(spec)
		src := ingest.Source{Model: "org/model-a", WorkerID: w, Endpoint: "tcp://127.0.0.1:1"}
		dec := ingest.NewDecoder()
		for s := range perEngine {
			b, _, err := dec.DecodeBatch("", uint64(s), gen.Next())
			require.NoError(tb, err)
			data, err := EncodeBatch(src, b)
			require.NoError(tb, err)
			srcs, batches, wire = append(srcs, src), append(batches, b), append(wire, data)
		}
	}
	return srcs, batches, wire
}

func applyRateIndexer(tb testing.TB) *indexer.Indexer {
	ix, err := indexer.New(indexer.Options{BlockSize: testBlockSize, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(tb, err)
	return ix
}

// BenchmarkApplyRate compares a replica's apply rate with the indexer's
// own on the same engine batches (8 stores of 16 blocks), measured
// alternately, one after the other:
//
//   - decode: the part every replica pays per message without NATS
//     (decode, de-duplicate by engine seq, hand the batch to the
//     indexer);
//   - stream: a replica starting on a stream that already holds the
//     batches, timed until it has applied them all: NATS delivery through
//     the ordered consumer included (an embedded server on this machine).
//
// plane/indexer is the ratio of the two rates (1: the plane costs nothing
// over the indexer; the goal is at least 0.5).
func BenchmarkApplyRate(b *testing.B) {
	const perEngine = 1000
	srcs, batches, wire := applyRateBatches(b, perEngine)
	blocks := 0
	for _, bt := range batches {
		for _, ev := range bt.Events {
			blocks += len(ev.BlockHashes)
		}
	}
	indexerRun := func() time.Duration {
		ix := applyRateIndexer(b)
		start := time.Now()
		for i, bt := range batches {
			ix.HandleBatch(srcs[i], bt)
		}
		return time.Since(start)
	}
	b.Run("decode", func(b *testing.B) {
		var ixTime, planeTime time.Duration
		for range b.N {
			ixTime += indexerRun()
			p := &Plane{ix: applyRateIndexer(b), seqs: map[seqKey]seqState{}, log: slog.New(slog.DiscardHandler)}
			start := time.Now()
			for _, data := range wire {
				m, err := Decode(data)
				if err != nil {
					b.Fatal(err)
				}
				p.applyLocked(m)
			}
			planeTime += time.Since(start)
		}
		reportRates(b, float64(b.N*blocks), ixTime, planeTime)
	})
	b.Run("stream", func(b *testing.B) {
		nats := embedded(b)
		opts := testOptions(nats.URL())
		opts.ReplicaID = "filler"
		filler, err := New(opts, applyRateIndexer(b))
		require.NoError(b, err)
		ctx := context.Background()
		var acks []jetstream.PubAckFuture
		for i, data := range wire {
			ack, err := filler.js.PublishAsync(eventSubject(filler.opts.Prefix, srcs[i]), data)
			require.NoError(b, err)
			acks = append(acks, ack)
		}
		select {
		case <-filler.js.PublishAsyncComplete():
		case <-time.After(waitFor):
			b.Fatal("the stream was not filled in time")
		}
		for _, a := range acks {
			select {
			case <-a.Ok():
			case err := <-a.Err():
				b.Fatal(err)
			}
		}
		info, err := filler.stream.Info(ctx)
		require.NoError(b, err)
		last := info.State.LastSeq
		require.NoError(b, filler.Close())
		var ixTime, planeTime time.Duration
		for i := range b.N {
			ixTime += indexerRun()
			opts.ReplicaID = fmt.Sprintf("r%d", i)
			start := time.Now()
			p, err := New(opts, applyRateIndexer(b))
			require.NoError(b, err)
			for p.appliedSeq.Load() < last {
				time.Sleep(time.Millisecond)
			}
			planeTime += time.Since(start)
			require.NoError(b, p.Close())
		}
		reportRates(b, float64(b.N*blocks), ixTime, planeTime)
	})
}

// BenchmarkSnapshotCost: what a replica's snapshot of the same batches
// costs per block: the Export (the apply loop pauses meanwhile), the
// encoding, and the bytes written to the object store.
func BenchmarkSnapshotCost(b *testing.B) {
	const perEngine = 1000
	srcs, batches, _ := applyRateBatches(b, perEngine)
	ix := applyRateIndexer(b)
	for i, bt := range batches {
		ix.HandleBatch(srcs[i], bt)
	}
	var blocks uint64
	for _, sz := range ix.Sizes() {
		blocks += sz.Pairs
	}
	var exportT, encodeT time.Duration
	size := 0
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		saved := ix.Export()
		exportT += time.Since(start)
		start = time.Now()
		data, err := snapshot.Encode(saved)
		encodeT += time.Since(start)
		require.NoError(b, err)
		size = len(data)
	}
	b.StopTimer()
	n := float64(b.N) * float64(blocks)
	b.ReportMetric(float64(blocks), "blocks")
	b.ReportMetric(float64(exportT.Nanoseconds())/n, "export_ns/block")
	b.ReportMetric(float64(encodeT.Nanoseconds())/n, "encode_ns/block")
	b.ReportMetric(float64(size)/float64(blocks), "snapshot_bytes/block")
	b.ReportMetric(0, "ns/op")
}

func reportRates(b *testing.B, blocks float64, ixTime, planeTime time.Duration) {
	ixRate, planeRate := blocks/ixTime.Seconds(), blocks/planeTime.Seconds()
	b.ReportMetric(ixRate, "indexer_blocks/s")
	b.ReportMetric(planeRate, "plane_blocks/s")
	b.ReportMetric(planeRate/ixRate, "plane/indexer")
	b.ReportMetric(0, "ns/op")
}
