// Package benchalt runs two implementations of one operation alternately
// in a benchmark, so that both see the same machine (a shared host's load
// changes within a run), and reports each one's time and their ratio.
package benchalt

import (
	"testing"
	"time"
)

// block is how many calls of one side run before the other side's turn:
// enough that the clock's cost is lost in them, few enough that both
// sides see the same moments of the run.
const block = 8

// Run times next and old alternately, block calls each, b.N calls in all
// for each, and reports new-ns/op, old-ns/op and new/old (below 1: the
// new one is faster). ns/op is the time of one new and one old call.
func Run(b *testing.B, next, old func()) {
	b.Helper()
	b.ReportAllocs()
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
}
