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

// Past saturation kvrouter holds requests at the router (admission) and
// routes them by highest response ratio: the same trace with the queue
// off holds none and answers slower on average. At a light load nothing
// is held.
func TestKVRouterAdmissionQueue(t *testing.T) {
	tr := Trace{Name: "tenants", Requests: mooncake.Generate(5, mooncake.GenerateOptions{
		Requests: 600, RatePerSec: 20, Tenants: 24, TenantBlocks: 8, MaxOutput: 60, Family: mooncake.FamilyTenants,
	})}
	run := func(load float64, noAdmission bool) Row {
		cfg := smallConfig(tr)
		cfg.Loads = []float64{load}
		cfg.Policies = []string{policy.KVRouter}
		cfg.NoAdmission = noAdmission
		res, err := Run(context.Background(), cfg)
		require.NoError(t, err)
		require.Len(t, res.Rows, 1)
		return res.Rows[0]
	}
	held, direct := run(1.2, false), run(1.2, true)
	t.Logf("held %d: TTFT mean %.3f p90 %.3f hit %.3f; without the queue: mean %.3f p90 %.3f hit %.3f",
		held.Held, held.TTFTMean, held.TTFTP90, held.HitRate, direct.TTFTMean, direct.TTFTP90, direct.HitRate)
	assert.Positive(t, held.Held, "saturated: requests are held")
	assert.Zero(t, held.Failed, "every held request is routed in the end")
	assert.Zero(t, direct.Held)
	assert.Less(t, held.TTFTMean, direct.TTFTMean, "TTFT mean")
	assert.Zero(t, run(0.1, false).Held, "a light load holds nothing")
}

// Once an engine runs its max_num_seqs requests, kvrouter holds the
// requests routed to it at the router and sends them a batch of slots at
// a time (admit.Slots), so the engine never queues one of them itself;
// SGLang's policy, which sends every request at once, fills the same
// engines' queues (so there was something to hold). Every request ends.
func TestKVRouterHoldsAFullEnginesRequests(t *testing.T) {
	tr := Trace{Name: "tenants", Requests: mooncake.Generate(5, mooncake.GenerateOptions{
		Requests: 300, RatePerSec: 20, Tenants: 24, TenantBlocks: 8, MaxOutput: 60, Family: mooncake.FamilyTenants,
	})}
	cfg := smallConfig(tr)
	cfg.Engine.MaxNumSeqs = 6
	order := arrivalOrder(tr.Requests)
	offered, err := OfferedPrefillRate(tr.Requests)
	require.NoError(t, err)
	stretch := offered / (1.2 * FleetPrefillCapacity(cfg.Engine, cfg.Engines))
	tests := []struct {
		policy        string
		wantEngineCap bool // the engines never hold more than max_num_seqs
	}{
		{policy.KVRouter, true},
		{policy.SGLang, false},
	}
	for _, tt := range tests {
		t.Run(tt.policy, func(t *testing.T) {
			r, err := newRunner(&cfg, runSpec{policy: tt.policy, load: 1.2, seed: 1}, order, arrivals(tr.Requests, stretch))
			require.NoError(t, err)
			most := 0
			r.record = func(op) {
				for _, e := range r.engines {
					st := e.e.Stats()
					most = max(most, st.Running+st.Waiting)
				}
			}
			require.NoError(t, r.run(tr.Requests))
			assert.Len(t, r.out.ttft, len(tr.Requests), "every request ends")
			if tt.wantEngineCap {
				assert.LessOrEqual(t, most, cfg.Engine.MaxNumSeqs)
				for _, e := range r.engines {
					assert.Zero(t, e.slots.Held(), "nothing left held")
				}
			} else {
				assert.Greater(t, most, cfg.Engine.MaxNumSeqs)
			}
		})
	}
}
