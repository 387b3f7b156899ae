package proxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/internal/netguard"
	"github.com/kvhash/kvhash/router/proxy"
)

// recordingEngine answers completions and /health, remembering the
// Authorization header of each path's last request.
type recordingEngine struct {
	*httptest.Server
	mu   sync.Mutex
	auth map[string][]string // path -> Authorization values
}

func newRecordingEngine(t *testing.T, extra func(http.Header)) *recordingEngine {
	t.Helper()
	e := &recordingEngine{auth: map[string][]string{}}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.auth[r.URL.Path] = r.Header.Values("Authorization")
		e.mu.Unlock()
		if extra != nil {
			extra(w.Header())
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"choices":[{"text":"ok"}],"usage":{"prompt_tokens":5,"completion_tokens":1}}`)
	}))
	t.Cleanup(e.Close)
	return e
}

func (e *recordingEngine) authOf(path string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.auth[path]
}

func complete(t *testing.T, url, auth string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/v1/completions", strings.NewReader(`{"model":"m","prompt":[1,2,3,4,5]}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// A client's Authorization never reaches an engine unless forwarding is
// configured; an engine token, when set, is what engines get instead,
// on completions and on health checks alike.
func TestEngineAuthorization(t *testing.T) {
	tests := []struct {
		name       string
		opts       proxy.Options
		clientAuth string
		want       []string // what the engine saw
	}{
		{"stripped by default", proxy.Options{}, "Bearer client-secret", nil},
		{"engine token instead", proxy.Options{EngineToken: "engine-secret"}, "Bearer client-secret", []string{"Bearer engine-secret"}},
		{"engine token, client sends none", proxy.Options{EngineToken: "engine-secret"}, "", []string{"Bearer engine-secret"}},
		{"forwarded when configured", proxy.Options{ForwardClientAuthorization: true, EngineToken: "engine-secret"}, "Bearer client-secret", []string{"Bearer client-secret"}},
		{"forwarding, client sends none", proxy.Options{ForwardClientAuthorization: true, EngineToken: "engine-secret"}, "", []string{"Bearer engine-secret"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newRecordingEngine(t, nil)
			srv, _ := newProxy(t, e.URL, tc.opts)
			resp := complete(t, srv.URL, tc.clientAuth)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, tc.want, e.authOf("/v1/completions"))
		})
	}
}

func TestHealthCheckSendsEngineToken(t *testing.T) {
	e := newRecordingEngine(t, nil)
	_, _, px := newProxyWith(t, e.URL, proxy.Options{EngineToken: "engine-secret"})
	px.CheckHealth()
	assert.Equal(t, []string{"Bearer engine-secret"}, e.authOf("/health"))
}

// Headers an engine names in its Connection header are per connection:
// they never reach the client; the rest of the answer's headers do.
func TestHopByHopHeadersNamedByConnection(t *testing.T) {
	e := newRecordingEngine(t, func(h http.Header) {
		h.Add("Connection", "X-Secret-Hop, x-other-hop")
		h.Add("Connection", "keep-alive")
		h.Set("X-Secret-Hop", "s3cret")
		h.Set("X-Other-Hop", "1")
		h.Set("Keep-Alive", "timeout=5")
		h.Set("X-Engine-Kept", "yes")
	})
	srv, _ := newProxy(t, e.URL, proxy.Options{})
	resp := complete(t, srv.URL, "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Empty(t, resp.Header.Get("X-Secret-Hop"))
	assert.Empty(t, resp.Header.Get("X-Other-Hop"))
	assert.Empty(t, resp.Header.Get("Keep-Alive"))
	assert.Equal(t, "yes", resp.Header.Get("X-Engine-Kept"))
}

// The proxy's own client dials only inside the allowed networks,
// whatever the registered base_url says: a worker whose address is
// outside (registered before the networks were narrowed, or a name that
// now resolves elsewhere) gets a 502 and no request, health checks
// included.
func TestProxyDialsOnlyAllowedNetworks(t *testing.T) {
	e := newRecordingEngine(t, nil)
	nets, err := netguard.ParseNetworks([]string{"10.0.0.0/8"})
	require.NoError(t, err)
	srv, _, px := newProxyWith(t, e.URL, proxy.Options{AllowedNetworks: nets})
	resp := complete(t, srv.URL, "")
	assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
	body, _ := io.ReadAll(resp.Body)
	assert.Contains(t, string(body), "outside the allowed engine networks")
	px.CheckHealth()
	assert.Nil(t, e.authOf("/v1/completions"))
	e.mu.Lock()
	assert.Empty(t, e.auth, "the engine was never reached")
	e.mu.Unlock()

	allowed, err := netguard.ParseNetworks([]string{"127.0.0.0/8"})
	require.NoError(t, err)
	srv, _, _ = newProxyWith(t, e.URL, proxy.Options{AllowedNetworks: allowed})
	assert.Equal(t, http.StatusOK, complete(t, srv.URL, "").StatusCode)
}
