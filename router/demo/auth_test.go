package demo_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/demo"
	"github.com/kvhash/kvhash/router/proxy"
)

// The demo's kvrouter runs with auth on: each start has its own random
// admin token, a registration without it is refused, and the demo (which
// registers its engines with it) never prints it.
func TestDemoRunsWithAuthOn(t *testing.T) {
	a, b := demo.RouterConfig("127.0.0.1:0", 16), demo.RouterConfig("127.0.0.1:0", 16)
	assert.Len(t, a.Security.AdminToken, 64)
	assert.NotEqual(t, a.Security.AdminToken, b.Security.AdminToken, "a fresh token per start")

	r, err := demo.StartRouter(a, nil)
	require.NoError(t, err)
	defer r.Stop()
	register := func(auth string) int { return registerWorker(t, r.URL, 1, auth) }
	assert.Equal(t, http.StatusUnauthorized, register(""))
	assert.Equal(t, http.StatusUnauthorized, register("Bearer "+b.Security.AdminToken), "another start's token")
	assert.Equal(t, http.StatusCreated, register("Bearer "+r.AdminToken))

	// A short demo: it registers its fleet through the API (so with the
	// token), and its output holds no token.
	var out bytes.Buffer
	var token string
	o := testOptions(t, &out, 20, 50, proxy.PolicyRoundRobin)
	o.Engines = 2
	o.Hold = func(r *demo.Router) { token = r.AdminToken }
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rs, err := demo.Run(ctx, o)
	require.NoError(t, err, out.String())
	require.Len(t, rs, 1)
	require.NotEmpty(t, token)
	assert.NotContains(t, out.String(), token)
}

// Behind the replicas' front the token reaches every replica: a
// registration with it is accepted by all of them, one without it by
// none.
func TestReplicasFrontCarriesTheToken(t *testing.T) {
	r, err := demo.StartReplicas(demo.RouterConfig("127.0.0.1:0", 16), 2, nil) // nil: no logs (it panicked before)
	require.NoError(t, err)
	defer r.Stop()
	register := func(auth string) int { return registerWorker(t, r.URL, 7, auth) }
	assert.NotEqual(t, http.StatusCreated, register(""), "refused by the replicas")
	_, registered := r.Server.Indexer().Worker(7)
	assert.False(t, registered)
	assert.Equal(t, http.StatusCreated, register("Bearer "+r.AdminToken))
	_, registered = r.Server.Indexer().Worker(7)
	assert.True(t, registered)
}

// registerWorker posts a worker of model m to kvrouter at url with an
// Authorization header ("" for none) and returns the status.
func registerWorker(t *testing.T, url string, id uint64, auth string) int {
	t.Helper()
	body := strings.NewReader(fmt.Sprintf(`{"worker_id":%d,"model":"m"}`, id))
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/v1/workers", body)
	require.NoError(t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}
