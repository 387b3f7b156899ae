package epp_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkEnvoyHop is the cost of the picker in the gateway, on
// loopback: the same completion through Envoy with the picker
// (FULL_DUPLEX both ways, the override_host pool) and through Envoy alone
// (the pool's round robin), interleaved request by request so both see
// the same machine. It reports each path's p50 and p99 and what the
// picker adds.
func BenchmarkEnvoyHop(b *testing.B) {
	g := startGateway(b)
	body := map[string]any{"model": model, "prompt": prompt(7, 64), "max_tokens": 1}
	with, without := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		for k, name := range []string{"pool_duplex", "plain_pool"} {
			if i%2 == 1 {
				name = []string{"plain_pool", "pool_duplex"}[k]
			}
			t0 := time.Now()
			a := g.post(name, "/v1/completions", body, nil)
			d := time.Since(t0)
			require.Equal(b, http.StatusOK, a.status, "%s", a.body)
			if name == "pool_duplex" {
				with = append(with, d)
			} else {
				without = append(without, d)
			}
		}
	}
	b.StopTimer()
	p50w, p99w := quantiles(with)
	p50o, p99o := quantiles(without)
	b.ReportMetric(us(p50w), "p50-picker-us")
	b.ReportMetric(us(p99w), "p99-picker-us")
	b.ReportMetric(us(p50o), "p50-plain-us")
	b.ReportMetric(us(p99o), "p99-plain-us")
	b.ReportMetric(us(p50w-p50o), "p50-added-us")
	b.ReportMetric(us(p99w-p99o), "p99-added-us")
	b.ReportMetric(0, "ns/op")
}

func quantiles(ds []time.Duration) (p50, p99 time.Duration) {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0, 0
	}
	return s[len(s)/2], s[min(len(s)-1, len(s)*99/100)]
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
