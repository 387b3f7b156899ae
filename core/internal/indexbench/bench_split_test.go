package indexbench

import (
	"testing"
	"time"

	"github.com/kvhash/kvhash/core"
)

// BenchmarkStreamSplit replays a stream into a fresh index per iteration,
// timing stores, removals and routing queries apart: st-, rm- and
// mt-ns/blk are the time per stored, removed and matched block. It is the
// loop to profile for either path; skipped without -stream.
func BenchmarkStreamSplit(b *testing.B) {
	if *streamFlag == "" {
		b.Skip("no -stream FILE")
	}
	s, err := ReadStreamFile(*streamFlag)
	if err != nil {
		b.Fatal(err)
	}
	var st, rm, mt time.Duration
	var nst, nrm, nmt int
	for range b.N {
		x := core.NewIndex(core.IndexOptions{Mode: core.ModeEnforce})
		var buf []core.StoredBlock
		var ms []core.Match
		for i := range s.Records {
			r := &s.Records[i]
			w := core.Worker{ID: uint64(r.Worker)}
			switch r.Kind {
			case RecMatch:
				t0 := time.Now()
				ms = x.AppendMatches(ms[:0], r.Local, false)
				mt += time.Since(t0)
				nmt += len(r.Local)
			case RecStored:
				var parent *uint64
				if r.HasParent {
					parent = &r.Parent
				}
				buf = storeArgs(buf, r)
				t0 := time.Now()
				_ = x.ApplyStored(w, uint64(i), parent, buf)
				st += time.Since(t0)
				nst += len(buf)
			case RecRemoved:
				t0 := time.Now()
				_ = x.ApplyRemoved(w, uint64(i), r.Hashes)
				rm += time.Since(t0)
				nrm += len(r.Hashes)
			}
		}
	}
	b.ReportMetric(float64(st.Nanoseconds())/float64(nst), "st-ns/blk")
	b.ReportMetric(float64(rm.Nanoseconds())/float64(nrm), "rm-ns/blk")
	b.ReportMetric(float64(mt.Nanoseconds())/float64(nmt), "mt-ns/blk")
	b.ReportMetric(float64(nst)/float64(b.N), "st-blks")
	b.ReportMetric(float64(nrm)/float64(b.N), "rm-blks")
	b.ReportMetric(float64(nmt)/float64(b.N), "mt-blks")
}
