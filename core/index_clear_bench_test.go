package core

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"
)

// BenchmarkClearWhileMatching clears one of four ranks holding 250,000
// blocks each (prompts of 40-167 blocks, most under shared system
// prompts) while another goroutine matches 64-block prompts every 100 us
// or so, as a router does when an engine restarts or a rank is
// quarantined. "sectioned" is ClearWorker; "one-hold" is the clear under
// one hold of the write lock, as it was before. hold-max-us and
// hold-cpu-max-us are the longest hold of the write lock during the
// clear (wall and the writer thread's CPU), match-max-us the longest
// match meanwhile (its wait for the lock included), clear-ms the clear's
// whole time.
func BenchmarkClearWhileMatching(b *testing.B) {
	for _, mode := range []string{"sectioned", "one-hold"} {
		b.Run(mode, func(b *testing.B) {
			for range b.N {
				clearWhileMatching(b, mode == "one-hold")
			}
		})
	}
}

func clearWhileMatching(b *testing.B, oneHold bool) {
	b.StopTimer()
	x := NewIndex(IndexOptions{Mode: ModeWarn})
	sys := make([][]StoredBlock, 64)
	for i := range sys {
		sys[i] = chain(32, uint64(i+1)<<48)
	}
	var queries [][]uint64
	for w := range uint64(4) {
		wk := Worker{ID: w}
		for i := range sys {
			if err := x.ApplyStored(wk, 1, nil, sys[i]); err != nil {
				b.Fatal(err)
			}
		}
		for i, held := 0, 64*32; held < 250_000; i++ {
			s := sys[i%64]
			blocks := chainFrom(s[31].BlockHash, 40+i%128, (w<<40)|uint64(i+1)<<20)
			if err := x.ApplyStored(wk, 2, &s[31].BlockHash, blocks); err != nil {
				b.Fatal(err)
			}
			held += len(blocks)
			if i%64 == 0 {
				queries = append(queries, append(localsOf(s), localsOf(blocks)...)[:64])
			}
		}
	}
	if oneHold {
		x.writeSection = 1 << 30
	}

	stopMatching := matchEvery100us(x, queries)
	time.Sleep(10 * time.Millisecond) // the matcher is running

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ht := newHoldTimes(1 << 12)
	x.holdProbe = ht.probe
	b.StartTimer()
	start := time.Now()
	x.ClearWorker(Worker{ID: 0})
	elapsed := time.Since(start)
	b.StopTimer()
	x.holdProbe = nil
	time.Sleep(10 * time.Millisecond)
	lat := stopMatching()
	if n := x.WorkerBlocks(Worker{ID: 0}); n != 0 {
		b.Fatal(fmt.Sprintf("the cleared rank holds %d blocks", n))
	}
	b.ReportMetric(float64(slices.Max(ht.wall))/1e3, "hold-max-us")
	b.ReportMetric(float64(slices.Max(ht.cpu))/1e3, "hold-cpu-max-us")
	b.ReportMetric(float64(slices.Max(lat))/1e3, "match-max-us")
	b.ReportMetric(float64(elapsed.Microseconds())/1e3, "clear-ms")
	b.StartTimer()
}
