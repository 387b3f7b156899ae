package sim

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/internal/mooncake"
	"github.com/kvhash/kvhash/router/engine"
)

// FuzzRun: any small trace on a cramped fleet (few blocks: preemptions,
// prompts that can never fit) replays to the end under every policy,
// each request either finished or failed, failed only when it can never
// fit an engine, and the same twice.
func FuzzRun(f *testing.F) {
	f.Add(uint64(1), uint8(20), uint8(3), uint16(96), 2.0)
	f.Add(uint64(9), uint8(60), uint8(1), uint16(40), 9.0)
	f.Fuzz(func(t *testing.T, seed uint64, n, tenantBlocks uint8, blocks uint16, rate float64) {
		if n < 2 || !(rate > 0.1 && rate < 1000) {
			return
		}
		reqs := mooncake.Generate(seed, mooncake.GenerateOptions{
			Requests: int(n%80) + 2, RatePerSec: rate, SystemBlocks: 1, Tenants: 3, TenantBlocks: int(tenantBlocks%4) + 1, MaxOutput: 24,
		})
		cfg := DefaultConfig()
		cfg.Trace = Trace{Name: "fuzz", Requests: reqs}
		cfg.Engines = 2
		cfg.Loads, cfg.RateScales = nil, []float64{1}
		cfg.Engine = engine.DefaultConfig()
		cfg.Engine.BlockSize = 16
		cfg.Engine.NumBlocks = int(blocks%200) + 8
		cfg.Engine.MaxNumSeqs = 4
		cfg.Engine.MaxNumBatchedTokens = 256
		cfg.ScrapeInterval = 50 * time.Millisecond
		a, err := Run(context.Background(), cfg)
		require.NoError(t, err)
		tooLarge := 0
		for _, q := range reqs {
			if (q.InputLength+max(1, q.OutputLength)+cfg.Engine.BlockSize-1)/cfg.Engine.BlockSize > cfg.Engine.NumBlocks {
				tooLarge++
			}
		}
		for _, r := range a.Rows {
			require.Equal(t, len(reqs), r.Requests)
			require.LessOrEqual(t, r.Failed, tooLarge, "%s failed requests that fit", r.Policy)
		}
		b, err := Run(context.Background(), cfg)
		require.NoError(t, err)
		require.Equal(t, a, b)
	})
}
