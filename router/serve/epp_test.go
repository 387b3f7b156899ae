package serve

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/kvhash/kvhash/router/epp"
)

func TestEPPListenServesThePicker(t *testing.T) {
	cfg := testConfig()
	cfg.EPP.Listen = "127.0.0.1:0"
	s := newTestServer(t, cfg)
	addr := s.srv.EPPAddr()
	require.NotNil(t, addr)
	conn, err := grpc.NewClient(addr.String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	r, err := healthpb.NewHealthClient(conn).Check(t.Context(), &healthpb.HealthCheckRequest{Service: epp.ServiceName})
	require.NoError(t, err)
	assert.Equal(t, healthpb.HealthCheckResponse_SERVING, r.GetStatus())
	code, body := s.do("GET", "/metrics", "")
	require.Equal(t, 200, code)
	assert.True(t, strings.Contains(string(body), "kvrouter_epp_picks_total"), "the picker's metrics are on /metrics")
}

func TestNoEPPWithoutListen(t *testing.T) {
	s := newTestServer(t, testConfig())
	assert.Nil(t, s.srv.EPPAddr())
}
