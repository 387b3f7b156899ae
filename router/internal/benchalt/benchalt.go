// Package benchalt runs two implementations of one operation alternately
// in a benchmark, so that both see the same machine (a shared host's load
// changes within a run), and reports each one's time, memory and their
// ratio.
package benchalt

import (
	"runtime"
	"testing"
	"time"
)

// block is how many calls of one side run before the other side's turn:
// enough that the clock's cost is lost in them, few enough that both
// sides see the same moments of the run.
const block = 8

// Run times next and old alternately, block calls each, b.N calls in all
// for each, and reports new-ns/op, old-ns/op and new/old (below 1: the
// new one is faster; ns/op is one new and one old call), then each one's
// bytes and allocations per call (measured apart, before the timing).
func Run(b *testing.B, next, old func()) {
	b.Helper()
	newBytes, newAllocs := memPerCall(next)
	oldBytes, oldAllocs := memPerCall(old)
	b.ResetTimer()
	var tNew, tOld time.Duration
	for done := 0; done < b.N; done += block {
		n := min(block, b.N-done)
		t0 := time.Now()
		for range n {
			next()
		}
		t1 := time.Now()
		for range n {
			old()
		}
		tNew += t1.Sub(t0)
		tOld += time.Since(t1)
	}
	b.ReportMetric(float64(tNew.Nanoseconds())/float64(b.N), "new-ns/op")
	b.ReportMetric(float64(tOld.Nanoseconds())/float64(b.N), "old-ns/op")
	if tOld > 0 {
		b.ReportMetric(float64(tNew)/float64(tOld), "new/old")
	}
	b.ReportMetric(newBytes, "new-B/op")
	b.ReportMetric(oldBytes, "old-B/op")
	b.ReportMetric(newAllocs, "new-allocs/op")
	b.ReportMetric(oldAllocs, "old-allocs/op")
}

// memPerCall is the heap bytes and allocations of one call of f, the mean
// of a few. The runtime's counts are the whole process's: as
// testing.AllocsPerRun does, the calls run at GOMAXPROCS 1 so that other
// goroutines (the race detector's, the test framework's) rarely allocate
// meanwhile; one that does still adds 1/memCalls to the mean.
func memPerCall(f func()) (bytes, allocs float64) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f() // warm: pools, lazily built tables
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range memCalls {
		f()
	}
	runtime.ReadMemStats(&after)
	return float64(after.TotalAlloc-before.TotalAlloc) / memCalls, float64(after.Mallocs-before.Mallocs) / memCalls
}

// memCalls is how many calls memPerCall averages over.
const memCalls = 64
