package ingest

import (
	"fmt"
	"testing"

	"github.com/kvhash/kvhash/router/ingest/ingesttest"
)

// BenchmarkDecode decodes realistic vLLM batches (16-token blocks, 8
// events of 16 blocks each) in both event encodings and both hash forms;
// the figure is blocks/s (stored blocks decoded, on one goroutine).
func BenchmarkDecode(b *testing.B) {
	for _, layout := range []ingesttest.Layout{ingesttest.MapEvents, ingesttest.ArrayEvents} {
		for _, bytesHashes := range []bool{false, true} {
			spec := ingesttest.DefaultSpec(layout)
			spec.BytesHashes = bytesHashes
			spec.RemoveEvery = 4
			hashes := "int"
			if bytesHashes {
				hashes = "bytes"
			}
			b.Run(fmt.Sprintf("%s/%s", layout, hashes), func(b *testing.B) {
				gen := ingesttest.NewGenerator(spec)
				payloads := gen.Payloads(64)
				size := 0
				for _, p := range payloads {
					size += len(p)
				}
				dec := NewDecoder()
				b.SetBytes(int64(size / len(payloads)))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					if _, _, err := dec.DecodeBatch("", uint64(i), payloads[i%len(payloads)]); err != nil {
						b.Fatal(err)
					}
				}
				blocks := float64(b.N) * float64(gen.BlocksPerBatch())
				b.ReportMetric(blocks/b.Elapsed().Seconds(), "blocks/s")
			})
		}
	}
}
