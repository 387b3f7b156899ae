package serve

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A worker's base_url is where kvrouter polls and proxies users'
// completions: anything but a plain http(s)://host:port[/prefix] is a
// 400, whichever API registers it.
func TestRegisterRejectsBadBaseURL(t *testing.T) {
	s := newTestServer(t, testConfig())
	for _, bad := range []string{"file:///etc/passwd", "not a url", "gopher://127.0.0.1:70", "http://user:pw@127.0.0.1:8000",
		"http://127.0.0.1:8000/a/../admin", "http://127.0.0.1:8000/?next=x", "http://127.0.0.1:8000#x", "http:///v1", "http://127.0.0.1:8000/%2e%2e"} {
		code, body := s.do("POST", "/v1/workers", `{"worker_id":1,"model":"m","base_url":"`+bad+`"}`)
		require.Equal(t, 400, code, "%s: %s", bad, body)
		assert.Equal(t, "invalid_base_url", decodeErrorReply(t, body).Error.Code, bad)
	}
	// Accepted ones are kept normalized (no trailing slash), the form
	// the proxy appends its paths to.
	var v workerView
	s.must(201, "POST", "/v1/workers", `{"worker_id":1,"model":"m","base_url":"http://127.0.0.1:8000/"}`, &v)
	assert.Equal(t, "http://127.0.0.1:8000", v.BaseURL)
	s.must(200, "POST", "/v1/workers", `{"worker_id":1,"model":"m","base_url":"https://engine-1.internal:8443/pool"}`, &v)
	assert.Equal(t, "https://engine-1.internal:8443/pool", v.BaseURL)
}

// With allowed engine networks, a base_url or ZeroMQ endpoint outside
// them is refused at registration (kvrouter's API and Dynamo's); inside
// them it is accepted.
func TestRegisterAllowedEngineNetworks(t *testing.T) {
	c := testConfig()
	c.Security.AllowedEngineCIDRs = []string{"10.0.0.0/8", "::1/128"}
	s := newTestServer(t, c)
	tests := []struct {
		name, body string
		want       int
	}{
		{"base_url outside", `{"worker_id":1,"model":"m","base_url":"http://127.0.0.1:8000"}`, 400},
		{"base_url name resolving outside", `{"worker_id":1,"model":"m","base_url":"http://localhost:8000"}`, 400},
		{"endpoint outside", `{"worker_id":1,"model":"m","endpoint":"tcp://127.0.0.1:5557"}`, 400},
		{"replay endpoint outside", `{"worker_id":1,"model":"m","endpoint":"tcp://10.0.0.1:5557","replay_endpoint":"tcp://192.168.0.1:5558"}`, 400},
		{"inside", `{"worker_id":1,"model":"m","base_url":"http://10.1.2.3:8000","endpoint":"tcp://10.1.2.3:5557"}`, 201},
		{"IPv6 inside", `{"worker_id":2,"model":"m","base_url":"http://[::1]:8000"}`, 201},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := s.do("POST", "/v1/workers", tc.body)
			require.Equal(t, tc.want, code, "%s", body)
			if tc.want == 400 {
				assert.Equal(t, "engine_not_allowed", decodeErrorReply(t, body).Error.Code)
			}
		})
	}
	code, body := s.do("POST", "/register", `{"instance_id":5,"endpoint":"tcp://127.0.0.1:5557","model_name":"m","block_size":4}`)
	require.Equal(t, 400, code, "%s", body)
	assert.Contains(t, string(body), "outside the allowed engine networks")
}
