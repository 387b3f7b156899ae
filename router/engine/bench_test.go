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

// BenchmarkDrain runs one engine's share of a Mooncake-shaped trace to
// the end: 500 requests (a 3,993-request trace over 8 engines) of about
// 15k prompt tokens, 40 % of their blocks shared with an earlier request,
// 150 output tokens, all queued at once. One op is the whole drain.
func BenchmarkDrain(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 7))
	type req struct {
		hs             []uint64
		prompt, output int
	}
	reqs := make([]req, 500)
	for i := range reqs {
		prompt := 2000 + rng.IntN(26000)
		full := prompt / 64
		hs := chain(uint64(i+1), full)
		if i > 0 {
			base := reqs[rng.IntN(i)].hs
			hs = fork(base, min(len(base), full*2/5), uint64(i+1), full)
		}
		reqs[i] = req{hs, prompt, 1 + rng.IntN(300)}
	}
	b.ReportAllocs()
	steps := 0
	for b.Loop() {
		e := newEngine(b, DefaultConfig())
		for i, r := range reqs {
			if err := e.Add(Request{ID: strconv.Itoa(i), BlockHashes: r.hs, PromptTokens: r.prompt, OutputTokens: r.output}); err != nil {
				b.Fatal(err)
			}
		}
		for !e.Idle() {
			e.Step()
			steps++
		}
	}
	b.ReportMetric(float64(steps)/float64(b.N), "steps/op")
}
