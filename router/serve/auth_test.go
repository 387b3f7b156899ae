package serve

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/config"
	"github.com/kvhash/kvhash/router/internal/logtest"
)

const (
	testAdminToken = "admin-token-for-tests"
	testAPIToken   = "api-token-for-tests"
)

// authConfig is testConfig with both tokens and the given access levels
// of /metrics and the dashboard.
func authConfig(metrics, dashboard string) config.Config {
	c := testConfig()
	c.Security.AdminToken, c.Security.APIToken = testAdminToken, testAPIToken
	c.Security.MetricsAuth, c.Security.DashboardAuth = metrics, dashboard
	return c
}

// doAuth sends a request with an Authorization header (none when auth
// is ""), returning the status, the body and the WWW-Authenticate header.
func (s *testServer) doAuth(method, path, body, auth string) (int, []byte, string) {
	s.t.Helper()
	req, err := http.NewRequestWithContext(s.t.Context(), method, s.ts.URL+path, strings.NewReader(body))
	require.NoError(s.t, err)
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := s.ts.Client().Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	return resp.StatusCode, out, resp.Header.Get("WWW-Authenticate")
}

type errorReply struct {
	Error struct{ Message, Type, Code string } `json:"error"`
}

func decodeErrorReply(t *testing.T, body []byte) errorReply {
	t.Helper()
	var e errorReply
	require.NoError(t, json.Unmarshal(body, &e), "%s", body)
	return e
}

// Every endpoint class: no token and a wrong token are 401 (OpenAI's
// error object, WWW-Authenticate: Bearer), the API token on a state
// change is 403, the right token passes. The calls run in order on one
// server, so each passing call sets up the next.
func TestAuthEveryEndpointClass(t *testing.T) {
	s := newTestServer(t, authConfig(config.AccessOpen, config.AccessOpen))
	prompt := seqTokens(1, 8)
	tests := []struct {
		name, method, path, body string
		admin                    bool // a state change: the admin token only
		want                     int  // with the right token (0: anything but 401 and 403)
	}{
		{"register a worker", "POST", "/v1/workers", `{"worker_id":1,"model":"m"}`, true, 201},
		{"send events", "POST", "/v1/events?worker_id=1", storedEvent(t, 1, 0, nil, prompt, 10, core.Options{}), true, 200},
		{"route", "POST", "/v1/route", `{"model":"m","token_ids":` + tokensJSON(prompt) + `,"request_id":"r1"}`, false, 200},
		{"prefill done", "POST", "/v1/requests/r1/prefill_done", "", true, 200},
		{"free a request", "DELETE", "/v1/requests/r1", "", true, 200},
		{"list workers", "GET", "/v1/workers", "", false, 200},
		{"one worker", "GET", "/v1/workers/1", "", false, 200},
		{"Dynamo workers", "GET", "/workers", "", false, 200},
		{"Dynamo dump", "GET", "/dump", "", false, 200},
		{"Dynamo query", "POST", "/query", `{}`, false, 0},
		{"Dynamo query by hash", "POST", "/query_by_hash", `{}`, false, 0},
		{"Dynamo register", "POST", "/register", `{}`, true, 0},
		{"Dynamo unregister", "POST", "/unregister", `{}`, true, 0},
		{"proxy completion", "POST", "/v1/completions", `{"model":"m","prompt":[1,2,3,4]}`, false, 0},
		{"proxy chat", "POST", "/v1/chat/completions", `{"model":"m","messages":[]}`, false, 0},
		{"an unknown state change is closed", "POST", "/v1/nope", `{}`, true, 404},
		{"remove the worker", "DELETE", "/v1/workers/1", "", true, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, bad := range []string{"", "Bearer wrong", "Bearer " + testAdminToken + "x", "Basic " + testAdminToken, "Bearer"} {
				code, body, www := s.doAuth(tc.method, tc.path, tc.body, bad)
				require.Equal(t, http.StatusUnauthorized, code, "Authorization %q: %s", bad, body)
				assert.Contains(t, www, "Bearer")
				e := decodeErrorReply(t, body)
				assert.Equal(t, "authentication_error", e.Error.Type)
				assert.Contains(t, []string{"missing_token", "invalid_token"}, e.Error.Code)
			}
			right := "Bearer " + testAPIToken
			if tc.admin {
				code, body, _ := s.doAuth(tc.method, tc.path, tc.body, right)
				require.Equal(t, http.StatusForbidden, code, "the API token on a state change: %s", body)
				assert.Equal(t, "permission_error", decodeErrorReply(t, body).Error.Type)
				right = "Bearer " + testAdminToken
			}
			code, body, _ := s.doAuth(tc.method, tc.path, tc.body, right)
			if tc.want != 0 {
				require.Equal(t, tc.want, code, "%s", body)
			}
			require.NotContains(t, []int{401, 403}, code, "%s", body)
		})
	}
	// The admin token also passes routing calls, and the scheme's case
	// does not matter.
	code, body, _ := s.doAuth("GET", "/v1/workers", "", "bearer "+testAdminToken)
	require.Equal(t, 200, code, "%s", body)
}

// Health answers anyone; /metrics and the dashboard follow their
// settings.
func TestAuthHealthMetricsDashboard(t *testing.T) {
	type call struct{ path, auth string }
	admin, api := "Bearer "+testAdminToken, "Bearer "+testAPIToken
	tests := []struct {
		name               string
		metrics, dashboard string
		want               map[call]int
	}{
		{"open", config.AccessOpen, config.AccessOpen, map[call]int{
			{"/health", ""}: 200, {"/healthz", ""}: 200, {"/readyz", ""}: 200,
			{"/metrics", ""}: 200, {"/", ""}: 200, {"/v1/dashboard", ""}: 200, {"/dashboard/index.html", ""}: 200,
		}},
		{"api", config.AccessAPI, config.AccessAPI, map[call]int{
			{"/healthz", ""}: 200,
			{"/metrics", ""}: 401, {"/metrics", api}: 200, {"/metrics", admin}: 200,
			{"/", ""}: 401, {"/v1/dashboard", "Bearer nope"}: 401, {"/v1/dashboard", api}: 200, {"/", admin}: 200,
		}},
		{"admin", config.AccessAdmin, config.AccessAdmin, map[call]int{
			{"/health", ""}: 200, {"/readyz", ""}: 200,
			{"/metrics", ""}: 401, {"/metrics", api}: 403, {"/metrics", admin}: 200,
			{"/v1/dashboard", ""}: 401, {"/v1/dashboard", api}: 403, {"/v1/dashboard", admin}: 200,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestServer(t, authConfig(tc.metrics, tc.dashboard))
			for c, want := range tc.want {
				code, body, _ := s.doAuth("GET", c.path, "", c.auth)
				assert.Equal(t, want, code, "GET %s with %q: %.200s", c.path, c.auth, body)
			}
		})
	}
}

// Without an API token routing calls are open while state changes
// still need the admin token; without any token everything is open
// (the loopback default).
func TestAuthPartialConfigs(t *testing.T) {
	c := testConfig()
	c.Security.AdminToken = testAdminToken
	s := newTestServer(t, c)
	code, _, _ := s.doAuth("GET", "/v1/workers", "", "")
	assert.Equal(t, 200, code)
	code, _, _ = s.doAuth("POST", "/v1/workers", `{"worker_id":1,"model":"m"}`, "")
	assert.Equal(t, 401, code)
	code, _, _ = s.doAuth("POST", "/v1/workers", `{"worker_id":1,"model":"m"}`, "Bearer "+testAdminToken)
	assert.Equal(t, 201, code)

	open := newTestServer(t, testConfig())
	code, _, _ = open.doAuth("POST", "/v1/workers", `{"worker_id":1,"model":"m"}`, "")
	assert.Equal(t, 201, code)
}

// Refusals are counted by reason.
func TestAuthRefusalsCounted(t *testing.T) {
	s := newTestServer(t, authConfig(config.AccessOpen, config.AccessOpen))
	s.doAuth("POST", "/v1/workers", `{}`, "")
	s.doAuth("POST", "/v1/workers", `{}`, "Bearer wrong")
	s.doAuth("POST", "/v1/workers", `{}`, "Bearer "+testAPIToken)
	_, body, _ := s.doAuth("GET", "/metrics", "", "")
	for _, reason := range []string{"missing", "invalid", "insufficient"} {
		assert.Contains(t, string(body), `kvrouter_http_unauthorized_total{reason="`+reason+`"} 1`)
	}
}

// --insecure-no-auth on a non-loopback address says so in one WARN
// line; with a token, or on loopback, nothing is said.
func TestInsecureNoAuthWarnsOnce(t *testing.T) {
	tests := []struct {
		name, listen, token string
		insecure            bool
		warns               int
	}{
		{"explicitly insecure", "0.0.0.0:8090", "", true, 1},
		{"with a token", "0.0.0.0:8090", testAdminToken, false, 0},
		{"loopback", "127.0.0.1:8090", "", false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf logtest.Buffer
			c := testConfig()
			c.Listen, c.Security.AdminToken, c.Security.InsecureNoAuth = tc.listen, tc.token, tc.insecure
			_, err := New(Options{Config: c, Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))})
			require.NoError(t, err)
			assert.Equal(t, tc.warns, strings.Count(buf.String(), "insecure-no-auth"), "%s", buf.String())
			assert.Equal(t, tc.warns, strings.Count(buf.String(), "level=WARN"), "%s", buf.String())
		})
	}
}
