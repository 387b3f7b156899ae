package sim

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/internal/mooncake"
	"github.com/kvhash/kvhash/router/route/policy"
)

// kvrouter (predicted TTFT) against Dynamo's default cost on a small
// generated trace of many tenants with long prefixes, overloaded: it
// keeps more of the cache and answers faster. A deterministic check of
// the simulated numbers (virtual clock, fixed seeds), not a timing test.
func TestKVRouterBeatsDynamoUnderLoad(t *testing.T) {
	tr := Trace{Name: "tenants", Requests: mooncake.Generate(5, mooncake.GenerateOptions{
		Requests: 600, RatePerSec: 20, Tenants: 24, TenantBlocks: 8, MaxOutput: 60, Family: mooncake.FamilyTenants,
	})}
	cfg := smallConfig(tr)
	cfg.Loads = []float64{1.2}
	cfg.Policies = []string{policy.KVRouter, policy.Dynamo}
	res, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Len(t, res.Rows, 2)
	kv, dyn := res.Rows[0], res.Rows[1]
	require.Equal(t, policy.KVRouter, kv.Policy)
	t.Logf("kvrouter TTFT mean %.3f p90 %.3f hit %.3f; dynamo mean %.3f p90 %.3f hit %.3f",
		kv.TTFTMean, kv.TTFTP90, kv.HitRate, dyn.TTFTMean, dyn.TTFTP90, dyn.HitRate)
	assert.Less(t, kv.TTFTP90, dyn.TTFTP90, "TTFT p90")
	assert.Less(t, kv.TTFTMean, dyn.TTFTMean, "TTFT mean")
	assert.Greater(t, kv.HitRate, dyn.HitRate, "prefix hit rate")
}
