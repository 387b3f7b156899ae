package engine

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// BenchmarkStep steps one engine of the default (mocker) shape under a
// steady load like a trace's: prompts of 1-12k tokens, half of them
// sharing a prefix with an earlier one, 50-400 output tokens, and a new
// request whenever fewer than `queue` are in the engine.
func BenchmarkStep(b *testing.B) {
	for _, queue := range []int{16, 64, 300} {
		b.Run("requests="+strconv.Itoa(queue), func(b *testing.B) {
			e := newEngine(b, DefaultConfig())
			rng := rand.New(rand.NewPCG(1, 1))
			var prefixes [][]uint64
			next := 0
			add := func() {
				prompt := 1000 + rng.IntN(11000)
				full := prompt / 64
				var hs []uint64
				if len(prefixes) > 0 && rng.IntN(2) == 0 {
					base := prefixes[rng.IntN(len(prefixes))]
					hs = fork(base, min(len(base), full, rng.IntN(full+1)), uint64(next+1), full)
				} else {
					hs = chain(uint64(next+1), full)
				}
				if len(prefixes) < 200 {
					prefixes = append(prefixes, hs)
				} else {
					prefixes[rng.IntN(200)] = hs
				}
				if err := e.Add(Request{ID: "r" + strconv.Itoa(next), BlockHashes: hs, PromptTokens: prompt, OutputTokens: 50 + rng.IntN(350)}); err != nil {
					b.Fatal(err)
				}
				next++
			}
			for range queue {
				add()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				r := e.Step()
				for range r.Finished {
					add()
				}
			}
		})
	}
}
