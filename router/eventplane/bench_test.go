package eventplane

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkEventPlane: engine batches (8 stores of 16 blocks each, as
// vLLM's steps under load) through one ingesting replica, the JetStream
// stream and three replicas' indexes, on an embedded NATS server on this
// machine. b.N batches spread over 4 engines; events/s counts engine
// events (stores) applied by all three replicas. The lag is from the
// engine's send to the last of the three replicas having applied the
// batch, measured at a paced rate (pace_batches_per_s) so that it is the
// pipeline's latency, not a queue's.
func BenchmarkEventPlane(b *testing.B) {
	for _, pace := range []int{0, 500} {
		name := "unpaced"
		if pace > 0 {
			name = fmt.Sprintf("paced%d", pace)
		}
		b.Run(name, func(b *testing.B) { benchPlane(b, pace) })
	}
}

func benchPlane(b *testing.B, pace int) {
	const engines, eventsPerBatch, blocksPerEvent = 4, 8, 16
	nats := embedded(b)
	f := &fleet{t: b, url: nats.URL(), opts: testOptions(nats.URL())}
	for i := range engines {
		f.engines = append(f.engines, newTestEngineSized(b, uint64(i+1), eventsPerBatch, blocksPerEvent))
	}
	rs := []*replica{f.start("a", false), f.start("b", false), f.start("c", false)}
	f.waitSubscribed()

	per := (b.N + engines - 1) / engines
	sentAt := make([][]int64, engines)
	doneAt := make([][]atomic.Int64, engines) // the latest replica's apply time
	counts := make([][]atomic.Int32, engines) // replicas that applied it
	for i := range engines {
		sentAt[i] = make([]int64, per)
		doneAt[i] = make([]atomic.Int64, per)
		counts[i] = make([]atomic.Int32, per)
	}
	var all sync.WaitGroup
	all.Add(engines * per)
	hook := func(m Message) {
		if m.Batch == nil {
			return
		}
		e, s := int(m.Source.WorkerID)-1, m.Batch.Seq
		if e < 0 || e >= engines || s >= uint64(per) {
			return
		}
		if counts[e][s].Add(1) == int32(len(rs)) {
			doneAt[e][s].Store(time.Now().UnixNano())
			all.Done()
		}
	}
	for _, r := range rs {
		r.plane.afterApply.Store(&hook)
	}

	b.ResetTimer()
	start := time.Now()
	var senders sync.WaitGroup
	for i, e := range f.engines {
		senders.Add(1)
		go func() {
			defer senders.Done()
			var tick *time.Ticker
			if pace > 0 {
				tick = time.NewTicker(time.Second * time.Duration(engines) / time.Duration(pace))
				defer tick.Stop()
			}
			for s := range per {
				if tick != nil {
					<-tick.C
				}
				sentAt[i][s] = time.Now().UnixNano()
				e.send(1)
			}
		}()
	}
	senders.Wait()
	all.Wait()
	elapsed := time.Since(start)
	b.StopTimer()

	var lags []float64
	for i := range engines {
		for s := range per {
			lags = append(lags, float64(doneAt[i][s].Load()-sentAt[i][s])/1e6)
		}
	}
	slices.Sort(lags)
	batches := float64(engines * per)
	b.ReportMetric(batches/elapsed.Seconds(), "batches/s")
	b.ReportMetric(batches*eventsPerBatch/elapsed.Seconds(), "events/s")
	b.ReportMetric(batches*eventsPerBatch*blocksPerEvent/elapsed.Seconds(), "blocks/s")
	b.ReportMetric(lags[len(lags)/2], "lag_p50_ms")
	b.ReportMetric(lags[len(lags)*99/100], "lag_p99_ms")
	var dups uint64
	for _, r := range rs {
		dups += r.plane.Stats().Duplicates.Load()
	}
	b.ReportMetric(float64(dups), "duplicates")
	b.ReportMetric(0, "ns/op")
}
