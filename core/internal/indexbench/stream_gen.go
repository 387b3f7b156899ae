package indexbench

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
)

// StreamConfig names one of the side-by-side streams.
type StreamConfig struct {
	Workers   int
	BlockSize int
	Evictions bool
	// CacheTokens overrides the default of CacheTokensPerWorker (small traces in tests).
	CacheTokens int
}

// Name is the stream's file name stem, e.g. "w128-bs16-evict".
func (c StreamConfig) Name() string {
	e := "noevict"
	if c.Evictions {
		e = "evict"
	}
	return fmt.Sprintf("w%d-bs%d-%s", c.Workers, c.BlockSize, e)
}

// CacheTokensPerWorker is each simulated engine's KV cache, in tokens: 512k
// tokens for 16 workers and 128k for 128 (the fleet holds 8M and 16M
// tokens), so that the trace (about 22M prompt tokens) makes them evict.
func (c StreamConfig) CacheTokensPerWorker() int {
	if c.CacheTokens > 0 {
		return c.CacheTokens
	}
	if c.Workers <= 16 {
		return 512 << 10
	}
	return 128 << 10
}

// Capacity is the per-worker cache in blocks, or 0 without evictions.
func (c StreamConfig) Capacity() int {
	if !c.Evictions {
		return 0
	}
	return c.CacheTokensPerWorker() / c.BlockSize
}

// StreamConfigs are the streams the side-by-side benchmark compares on:
// 16 and 128 workers, block sizes 16 and 64, with and without evictions.
func StreamConfigs() []StreamConfig {
	var out []StreamConfig
	for _, w := range []int{16, 128} {
		for _, bs := range []int{16, 64} {
			for _, ev := range []bool{true, false} {
				out = append(out, StreamConfig{Workers: w, BlockSize: bs, Evictions: ev})
			}
		}
	}
	return out
}

// noEvictionCapacity stands for an unbounded cache in Simulate.
const noEvictionCapacity = 1 << 30

// MakeStream expands reqs at the config's block size, routes them with
// Simulate and returns the resulting stream with its probes.
func MakeStream(reqs []Request, c StreamConfig, probePasses int) (*Stream, error) {
	ps, err := Expand(reqs, c.BlockSize)
	if err != nil {
		return nil, err
	}
	capacity := c.Capacity()
	simCap := capacity
	if simCap == 0 {
		simCap = noEvictionCapacity
	}
	rec, err := Simulate(ps, c.Workers, simCap)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", c.Name(), err)
	}
	return BuildStream(ps, rec, c.BlockSize, capacity, probePasses), nil
}

// WriteStreams writes one stream file per config into dir, named
// Name()+".kvs", and returns their paths.
func WriteStreams(reqs []Request, configs []StreamConfig, dir string, probePasses int) ([]string, error) {
	var paths []string
	for _, c := range configs {
		s, err := MakeStream(reqs, c, probePasses)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, c.Name()+".kvs")
		if err := WriteStreamFile(path, s); err != nil {
			return nil, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// SyntheticTrace makes a Mooncake-shaped trace for machines without the
// real one: multi-turn sessions whose requests extend the previous turn
// under a few shared system prompts (as the real trace has), n requests,
// the same for the same seed.
func SyntheticTrace(seed uint64, n int) []Request {
	rng := rand.New(rand.NewPCG(seed, 0x6b76))
	next := uint64(0)
	fresh := func(k int) []uint64 {
		out := make([]uint64, k)
		for i := range out {
			out[i] = next
			next++
		}
		return out
	}
	system := [][]uint64{fresh(4), fresh(8), fresh(12), fresh(2)}
	sessions := make([][]uint64, 64)
	out := make([]Request, 0, n)
	for i := range n {
		s := rng.IntN(len(sessions))
		if sessions[s] == nil || len(sessions[s]) > 60 || rng.IntN(4) == 0 {
			sessions[s] = append([]uint64(nil), system[rng.IntN(len(system))]...)
		}
		sessions[s] = append(sessions[s], fresh(1+rng.IntN(6))...)
		ids := append([]uint64(nil), sessions[s]...)
		out = append(out, Request{
			Timestamp:    int64(i) * 100,
			InputLength:  TraceBlockTokens*(len(ids)-1) + 1 + rng.IntN(TraceBlockTokens),
			OutputLength: 1 + rng.IntN(500),
			HashIDs:      ids,
		})
	}
	return out
}
