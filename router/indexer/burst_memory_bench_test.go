package indexer

import (
	"context"
	"encoding/binary"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/internal/enginetest"
	"github.com/kvhash/kvhash/router/ingest"
	"github.com/kvhash/kvhash/router/ingest/ingesttest"
)

// BenchmarkIngestMemory feeds 32 engines' vLLM-format msgpack batches
// (128 stored blocks and 2 removals each) over loopback ZeroMQ through
// ingest.Subscriber into the indexer, in a burst (as fast as the sockets
// take them) or paced (blocks/s in all), the same messages in the same
// per-engine order, so that each case builds the same index. It reports
// the peaks of the live heap and of the process's RSS (both sampled every
// millisecond), the live heap once the index is built (after a
// collection), the index's pairs and the rate achieved. The publishers
// run in this process: their messages (made fresh for each send, as zmq4
// writes them after Send returns) count in both peaks. Run one case a
// process, as the RSS a case leaves behind would count in the next:
//
//	go test -run '^$' -bench 'IngestMemory/burst' -benchtime 1x ./router/indexer
//
// KVHASH_INGEST_PAIRS sets the stored blocks in all (default 2M; the
// issue's figures were for 5.9M); KVHASH_QUEUE_BYTES sets the per-source
// ingest queue bound (ingest.Options.QueueBytes), KVHASH_QUEUE_BUDGET the
// bound on all of them (ingest.Options.QueueBudget).
func BenchmarkIngestMemory(b *testing.B) {
	for _, tc := range []struct {
		name  string
		paced int // blocks/s; 0: a burst
	}{{"burst", 0}, {"paced=500k", 500_000}, {"paced=200k", 200_000}} {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				ingestMemory(b, tc.paced)
			}
		})
	}
}

func ingestMemory(b *testing.B, paced int) {
	b.StopTimer()
	const engines, blockSize = 32, 16
	pairs := 2_000_000
	if s := os.Getenv("KVHASH_INGEST_PAIRS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		pairs = n
	}
	spec := ingesttest.DefaultSpec(ingesttest.ArrayEvents)
	spec.RemoveEvery = 4
	perBatch := spec.Events * spec.BlocksPerEvent
	perEngine := pairs / engines / perBatch

	ix, err := New(Options{BlockSize: blockSize, Mode: core.ModeWarn})
	if err != nil {
		b.Fatal(err)
	}
	port := enginetest.FreePorts(b, engines)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pubs := make([]zmq4.Socket, engines)
	for i := range pubs {
		pubs[i] = zmq4.NewPub(ctx)
		if err := pubs[i].Listen(enginetest.TCP(port + i)); err != nil {
			b.Fatal(err)
		}
		defer pubs[i].Close()
	}
	var handled atomic.Int64
	counter := &countingHandler{Indexer: ix, batches: &handled}
	opts := ingest.Options{Handler: counter}
	if v := os.Getenv("KVHASH_QUEUE_BYTES"); v != "" {
		opts.QueueBytes, _ = strconv.Atoi(v)
	}
	if v := os.Getenv("KVHASH_QUEUE_BUDGET"); v != "" {
		opts.QueueBudget, _ = strconv.Atoi(v)
	}
	s, err := ingest.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for i := range engines {
		if _, err := ix.AddWorker(WorkerSpec{WorkerID: uint64(i), Model: "m"}); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Subscribe(ingest.Subscription{Model: "m", WorkerID: uint64(i), Endpoint: enginetest.TCP(port + i)}); err != nil {
			b.Fatal(err)
		}
	}
	ingesttest.WaitConnected(b, counter.connected.Load, engines)
	runtime.GC()
	peak := ingesttest.StartPeakMemory()

	start := time.Now()
	b.StartTimer()
	var senders sync.WaitGroup
	for i := range pubs {
		senders.Add(1)
		go func() {
			defer senders.Done()
			es := spec
			es.Seed = uint64(i + 1)
			g := ingesttest.NewGenerator(es)
			// Each engine's share of the rate, a message at a time.
			var gap time.Duration
			if paced > 0 {
				gap = time.Duration(float64(time.Second) * float64(perBatch*engines) / float64(paced))
			}
			next := time.Now()
			for j := range perEngine {
				buf := g.Next() // zmq4 sends it after Send returns: a fresh one each
				var seq [8]byte
				binary.BigEndian.PutUint64(seq[:], uint64(j))
				if err := pubs[i].Send(zmq4.NewMsgFrom([]byte("kv"), seq[:], buf)); err != nil {
					return
				}
				if gap > 0 {
					next = next.Add(gap)
					time.Sleep(time.Until(next))
				}
			}
		}()
	}
	senders.Wait()
	want := int64(engines * perEngine)
	for deadline := time.Now().Add(120 * time.Second); handled.Load() < want && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	b.StopTimer()
	elapsed := time.Since(start)
	peakHeap, peakRSS := peak.Stop()
	if handled.Load() < want {
		st := s.Stats()
		b.Fatalf("%d of %d batches handled (messages %d, batches %d, panics %d, gaps %d, malformed %d, dup %d restarts %d unknown %d)", handled.Load(), want,
			st.Messages.Load(), st.Batches.Load(), st.HandlerPanics.Load(), st.Gaps.Load(), st.MalformedTotal(), st.Duplicates.Load(), st.Restarts.Load(), st.UnknownEvents.Load())
	}
	var got uint64
	for _, sz := range ix.Sizes() {
		got += sz.Pairs
	}
	runtime.GC()
	heap := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(heap)
	b.ReportMetric(float64(peakHeap)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(peakRSS)/(1<<20), "peak-rss-MiB")
	b.ReportMetric(float64(heap[0].Value.Uint64())/(1<<20), "built-heap-MiB")
	b.ReportMetric(float64(got)/1e6, "Mpairs")
	b.ReportMetric(float64(want*int64(perBatch))/elapsed.Seconds()/1e6, "Mblocks/s")
	b.StartTimer()
}

// countingHandler counts the batches the indexer handled and the
// engines connected.
type countingHandler struct {
	*Indexer
	batches   *atomic.Int64
	connected atomic.Int64
}

func (h *countingHandler) HandleBatch(src ingest.Source, bt *ingest.Batch) {
	h.Indexer.HandleBatch(src, bt)
	h.batches.Add(1)
}

func (h *countingHandler) HandleStream(src ingest.Source, ev ingest.StreamEvent) {
	h.Indexer.HandleStream(src, ev)
	if ev.Kind == ingest.StreamConnected {
		h.connected.Add(1)
	}
}
