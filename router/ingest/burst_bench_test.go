package ingest

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/kvhash/kvhash/internal/enginetest"
	"github.com/kvhash/kvhash/router/ingest/ingesttest"
)

// BenchmarkBurstQueueMemory publishes a burst of long prompts (batches of
// 512 blocks) from 32 engines over loopback ZeroMQ, as fast as the
// sockets take them, to a Subscriber whose Handler applies 2M blocks/s at
// most (it spins 0.5 us a block, on one goroutine per engine): the queues
// between the sockets and the Handler fill. peak-heap-MiB is the live
// heap's peak (sampled every millisecond), with the queues bounded by
// their share of the budget (QueueBudget, the default: 256 KiB each here),
// by bytes alone (QueueBytes, 2 MiB each, as before the budget) and by
// count alone (as before that). The
// publishers run in this process, so the figure includes what their
// sockets and zmq4's readers buffer, which the router would not hold;
// the differences between them are the queues'. (Measured: a 234 MiB
// burst, 37.5 KiB messages: 217-263 MiB by count alone, 134-152 MiB
// bounded by bytes; one run of all three on 2026-12-03: 227, 129 and 71
// MiB with the budget, in the same time.)
func BenchmarkBurstQueueMemory(b *testing.B) {
	for _, tc := range []struct {
		name          string
		bytes, budget int
	}{
		{"queue=default", 0, 0},
		{"queue-budget=unbounded", 0, 1 << 40},
		{"queue-bytes=unbounded", 1 << 40, 1 << 40},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				burstQueueMemory(b, tc.bytes, tc.budget)
			}
		})
	}
}

// spinner is a Handler that costs perBlock a stored block.
type spinner struct {
	perBlock  time.Duration
	batches   atomic.Int64
	connected atomic.Int64
}

func (s *spinner) HandleBatch(_ Source, b *Batch) {
	n := 0
	for i := range b.Events {
		n += len(b.Events[i].BlockHashes)
	}
	for end := time.Now().Add(time.Duration(n) * s.perBlock); time.Now().Before(end); {
	}
	s.batches.Add(1)
}

func (s *spinner) HandleStream(_ Source, ev StreamEvent) {
	if ev.Kind == StreamConnected {
		s.connected.Add(1)
	}
}

func burstQueueMemory(b *testing.B, queueBytes, queueBudget int) {
	b.StopTimer()
	const engines, perEngine = 32, 200
	spec := ingesttest.DefaultSpec(ingesttest.ArrayEvents)
	spec.Events, spec.BlocksPerEvent = 1, 512
	payloads := ingesttest.NewGenerator(spec).Payloads(perEngine)
	port := enginetest.FreePorts(b, engines)
	pubs := make([]*ingesttest.Publisher, engines)
	for i := range pubs {
		pubs[i] = ingesttest.NewPublisher(b)
		pubs[i].Listen(enginetest.TCP(port + i))
	}
	h := &spinner{perBlock: 500 * time.Nanosecond}
	s, err := New(Options{Handler: h, QueueBytes: queueBytes, QueueBudget: queueBudget})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for i := range engines {
		if _, err := s.Subscribe(Subscription{Model: "m", WorkerID: uint64(i), Endpoint: enginetest.TCP(port + i)}); err != nil {
			b.Fatal(err)
		}
	}
	ingesttest.WaitConnected(b, h.connected.Load, engines)
	runtime.GC()
	peak := ingesttest.StartPeakMemory()
	b.StartTimer()
	var senders sync.WaitGroup
	for i := range pubs {
		senders.Add(1)
		go func() {
			defer senders.Done()
			for j, p := range payloads {
				// Not Publisher.Send: a failed send ends this goroutine, not the benchmark.
				if err := pubs[i].Sock.Send(zmq4.NewMsgFrom([]byte("kv"), ingesttest.SeqFrame(uint64(j)), p)); err != nil {
					return
				}
			}
		}()
	}
	senders.Wait()
	for deadline := time.Now().Add(60 * time.Second); h.batches.Load() < engines*perEngine && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	b.StopTimer()
	peakHeap, _ := peak.Stop()
	b.ReportMetric(float64(peakHeap)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(h.batches.Load())/float64(engines*perEngine)*100, "delivered-%")
	b.ReportMetric(float64(len(payloads[0]))/1024, "KiB/message")
	b.StartTimer()
}
