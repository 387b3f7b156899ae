package proxy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The headline's route percentiles are the default policy's: a demo's
// slower baselines, run through the same proxy, do not move them.
func TestSnapshotHeadlineIsTheDefaultPolicys(t *testing.T) {
	us := func(n int) time.Duration { return time.Duration(n) * time.Microsecond }
	for _, c := range []struct {
		name             string
		routes           map[Policy][]int // route latencies in µs
		wantPolicy       Policy
		wantP50, wantP99 float64
	}{
		{"the default policy alone", map[Policy][]int{PolicyKV: {10, 20, 30}}, PolicyKV, 20, 30},
		{"a slower baseline beside it", map[Policy][]int{PolicyKV: {10, 20, 30}, PolicyRoundRobin: {5000, 6000, 7000, 8000}}, PolicyKV, 20, 30},
		{"only baselines: every policy's", map[Policy][]int{PolicyRoundRobin: {100, 300}, PolicyRandom: {200}}, "", 200, 300},
		{"nothing routed", nil, "", 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStats(time.Now, PolicyKV)
			for p, lat := range c.routes {
				for _, v := range lat {
					s.routed(p, us(v), 0)
				}
			}
			snap := s.Snapshot()
			assert.Equal(t, c.wantPolicy, snap.RoutePolicy)
			assert.InDelta(t, c.wantP50, snap.RouteP50Us, 1e-9)
			assert.InDelta(t, c.wantP99, snap.RouteP99Us, 1e-9)
			var n uint64
			for _, lat := range c.routes {
				n += uint64(len(lat))
			}
			assert.Equal(t, n, snap.RouteRequests, "the count is every policy's")
		})
	}
}
