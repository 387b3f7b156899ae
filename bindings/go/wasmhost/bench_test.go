package wasmhost

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kvhash/kvhash/core"
	"github.com/stretchr/testify/require"
)

// The benchmark prompt: 8k tokens in blocks of 16, the usual router case.
const (
	benchTokens    = 8192
	benchBlockSize = 16
)

func benchPrompt() []uint32 {
	r := rand.New(rand.NewPCG(1, 2))
	tokens := make([]uint32, benchTokens)
	for i := range tokens {
		tokens[i] = r.Uint32N(200_000)
	}
	return tokens
}

// nativeNsPerOp is the last native result, so the wazero sub-benchmark,
// which runs after it, can report its throughput relative to native Go
// measured in the same run.
var nativeNsPerOp float64

// BenchmarkHash8k hashes an 8k-token prompt (block + sequence hashes) with
// native core and through the module in wazero, each with its best API:
// the fused one-pass call (core.AppendBlockAndSequenceHashes, and the
// module's kvhash_block_and_sequence_hashes in one crossing). The wazero
// result carries "x_native": native time / wazero time, i.e. its
// throughput as a fraction of native (target: at least 0.2).
func BenchmarkHash8k(b *testing.B) {
	tokens := benchPrompt()
	b.Run("native", func(b *testing.B) {
		blocks := make([]uint64, 0, benchTokens/benchBlockSize)
		seq := make([]uint64, 0, benchTokens/benchBlockSize)
		b.SetBytes(4 * benchTokens)
		b.ReportAllocs()
		for b.Loop() {
			var err error
			blocks, seq, err = core.AppendBlockAndSequenceHashes(blocks[:0], seq[:0], tokens, benchBlockSize, core.Options{})
			if err != nil {
				b.Fatal(err)
			}
		}
		nativeNsPerOp = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("wazero", func(b *testing.B) {
		m := sharedModule(b)
		blocks := make([]uint64, 0, benchTokens/benchBlockSize)
		seq := make([]uint64, 0, benchTokens/benchBlockSize)
		// The first call grows the instance's scratch allocation, and
		// with it linear memory (a copy on the Go heap): a one-time cost
		// kept out of the steady state measured.
		if _, _, err := m.AppendBlockAndSequenceHashes(blocks, seq, tokens, benchBlockSize, core.Options{}); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(4 * benchTokens)
		b.ReportAllocs()
		for b.Loop() {
			var err error
			blocks, seq, err = m.AppendBlockAndSequenceHashes(blocks[:0], seq[:0], tokens, benchBlockSize, core.Options{})
			if err != nil {
				b.Fatal(err)
			}
		}
		ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		if nativeNsPerOp > 0 {
			b.ReportMetric(nativeNsPerOp/ns, "x_native")
		}
	})
}

// BenchmarkStart measures a module start (compile or cache load, one
// instance, _initialize): cold with an empty compilation cache directory,
// and cached, the second start from the same directory.
func BenchmarkStart(b *testing.B) {
	wasm := moduleBytes(b)
	ctx := context.Background()
	start := func(b *testing.B, dir string) {
		m, err := Load(ctx, wasm, Config{CacheDir: dir})
		require.NoError(b, err)
		// One call, so the start includes a usable instance.
		_, err = m.ChainStep(1, 2)
		require.NoError(b, err)
		require.NoError(b, m.Close(ctx))
	}
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			dir := b.TempDir()
			b.StartTimer()
			start(b, dir)
		}
		reportMillis(b)
	})
	b.Run("cached", func(b *testing.B) {
		dir := b.TempDir()
		start(b, dir) // fills the cache
		for b.Loop() {
			start(b, dir)
		}
		reportMillis(b)
	})
}

func reportMillis(b *testing.B) {
	b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(time.Millisecond), "ms/start")
}

// BenchmarkHash8kParallel hashes from GOMAXPROCS goroutines at once, with
// one instance and with the default pool: the reason the pool exists.
func BenchmarkHash8kParallel(b *testing.B) {
	tokens := benchPrompt()
	wasm := moduleBytes(b)
	for _, n := range []int{1, 0} {
		name := "instances=default"
		if n > 0 {
			name = fmt.Sprintf("instances=%d", n)
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			m, err := Load(ctx, wasm, Config{Instances: n})
			require.NoError(b, err)
			defer m.Close(ctx)
			b.SetBytes(4 * benchTokens)
			b.RunParallel(func(pb *testing.PB) {
				blocks := make([]uint64, 0, benchTokens/benchBlockSize)
				for pb.Next() {
					var err error
					if blocks, err = m.AppendBlockHashes(blocks[:0], tokens, benchBlockSize, core.Options{}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkIndexApply stores a 32-block prompt on a worker and removes it
// again through the module (core's BenchmarkApply, across the boundary):
// each store asks the module's memory budget first.
func BenchmarkIndexApply(b *testing.B) {
	x, err := sharedModule(b).NewIndex(core.ModeWarn)
	require.NoError(b, err)
	defer x.Free()
	blocks := make([]core.StoredBlock, 32)
	hashes := make([]uint64, len(blocks))
	for i := range blocks {
		blocks[i] = core.StoredBlock{BlockHash: uint64(i + 1), TokensHash: uint64(1000 + i)}
		hashes[i] = uint64(i + 1)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		w := core.Worker{ID: uint64(i % 16)}
		if err := x.ApplyStored(w, 1, nil, blocks); err != nil {
			b.Fatal(err)
		}
		if err := x.ApplyRemoved(w, 2, hashes); err != nil {
			b.Fatal(err)
		}
	}
}
