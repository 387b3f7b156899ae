package ingesttest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/ingest"
	"github.com/kvhash/kvhash/router/ingest/ingesttest"
)

// The generated stream must be one an index can apply in order: every
// parent stored before, every block of the configured size, and the same
// engine hashes whichever layout or hash form carries them.
func TestGeneratorPayloadsAreAnApplicableStream(t *testing.T) {
	var firstHashes []uint64
	for _, l := range []ingesttest.Layout{ingesttest.MapEvents, ingesttest.ArrayEvents} {
		for _, bytesHashes := range []bool{false, true} {
			spec := ingesttest.DefaultSpec(l)
			spec.BytesHashes = bytesHashes
			spec.RemoveEvery = 2
			gen := ingesttest.NewGenerator(spec)
			dec := ingest.NewDecoder()
			stored := map[uint64]bool{}
			var hashes []uint64
			for seq, p := range gen.Payloads(20) {
				b, unknown, err := dec.DecodeBatch("", uint64(seq), p)
				require.NoError(t, err)
				require.Zero(t, unknown)
				blocks := 0
				for _, ev := range b.Events {
					switch ev.Kind {
					case ingest.BlockStored:
						if ev.ParentHash != nil {
							assert.True(t, stored[*ev.ParentHash], "parent %d stored before", *ev.ParentHash)
						}
						assert.Len(t, ev.TokenIDs, len(ev.BlockHashes)*spec.BlockSize)
						assert.Equal(t, spec.BlockSize, ev.BlockSize)
						for _, h := range ev.BlockHashes {
							stored[h] = true
						}
						blocks += len(ev.BlockHashes)
						hashes = append(hashes, ev.BlockHashes...)
					case ingest.BlockRemoved:
						for _, h := range ev.BlockHashes {
							assert.True(t, stored[h], "removed block %d stored before", h)
						}
					default:
						t.Fatalf("unexpected %v", ev.Kind)
					}
				}
				assert.Equal(t, gen.BlocksPerBatch(), blocks)
			}
			if firstHashes == nil {
				firstHashes = hashes
			} else {
				assert.Equal(t, firstHashes, hashes, "%v bytes=%v", l, bytesHashes)
			}
		}
	}
}
