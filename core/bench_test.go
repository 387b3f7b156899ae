package core

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/zeebo/xxh3"
)

// BenchmarkHashing compares block+sequence hashing of an 8,192-token
// prompt with its floor: the general XXH3-64 over the same blocks, no
// chain, no options. `make bench` prints their ratio. The sequence-only
// variant is the chain alone in portable Go (AppendSequenceHashes): its
// steps wait for each other, so a chain step's latency, not the block
// hashing, is what bounds block+sequence once the block hashing runs
// beside it (the AVX2 loops on amd64, which also run the chain tighter).
func BenchmarkHashing(b *testing.B) {
	const promptTokens = 8192
	tokens := randomTokens(rand.New(rand.NewPCG(11, 12)), promptTokens)
	bytes := appendTokens(nil, tokens)
	for _, blockSize := range []int{16, 64} {
		local := make([]uint64, 0, promptTokens)
		seq := make([]uint64, 0, promptTokens)
		blockBytes := 4 * blockSize
		b.Run(fmt.Sprintf("tokens=%d/bs=%d/floor", promptTokens, blockSize), func(b *testing.B) {
			b.SetBytes(int64(len(bytes)))
			for b.Loop() {
				local = local[:0]
				for off := 0; off+blockBytes <= len(bytes); off += blockBytes {
					local = append(local, xxh3.HashSeed(bytes[off:off+blockBytes], BaseSeed))
				}
			}
		})
		b.Run(fmt.Sprintf("tokens=%d/bs=%d/sequence-only", promptTokens, blockSize), func(b *testing.B) {
			for b.Loop() {
				seq = AppendSequenceHashes(seq[:0], local)
			}
		})
		b.Run(fmt.Sprintf("tokens=%d/bs=%d/block+sequence", promptTokens, blockSize), func(b *testing.B) {
			b.SetBytes(int64(len(bytes)))
			b.ReportAllocs()
			for b.Loop() {
				local, seq, _ = AppendBlockAndSequenceHashes(local[:0], seq[:0], tokens, blockSize, Options{})
			}
		})
	}
}
