package indexbench

import "testing"

// BenchmarkStreamSplit replays a stream into a fresh index per iteration,
// as indexstream replay does, and reports the time per stored, removed
// and matched block apart (st-, rm- and mt-ns/blk): the loop to profile
// for either path. Skipped without -stream.
func BenchmarkStreamSplit(b *testing.B) {
	p := packedOrSkip(b)
	var total StreamResult
	var routes int64
	for range b.N {
		res, err := p.Replay()
		if err != nil {
			b.Fatal(err)
		}
		total.StoredBlocks += res.StoredBlocks
		total.StoreNanos += res.StoreNanos
		total.ApplyBlocks += res.ApplyBlocks
		total.ApplyNanos += res.ApplyNanos
		total.BlockOps += res.BlockOps
		total.IndexNanos += res.IndexNanos
		for _, ns := range res.RouteNanos {
			routes += ns
		}
	}
	removed, matched := total.ApplyBlocks-total.StoredBlocks, total.BlockOps-total.ApplyBlocks
	b.ReportMetric(float64(total.StoreNanos)/float64(total.StoredBlocks), "st-ns/blk")
	b.ReportMetric(float64(total.ApplyNanos-total.StoreNanos)/float64(removed), "rm-ns/blk")
	b.ReportMetric(float64(routes)/float64(matched), "mt-ns/blk")
}
