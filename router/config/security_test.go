package config

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func tokenFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
	return p
}

// Tokens come from files or the environment, a file winning over its
// variable; none of them is ever printed by --print-config.
func TestParseTokens(t *testing.T) {
	t.Setenv(EnvAdminToken, "admin-from-env")
	t.Setenv(EnvAPIToken, " api-from-env\n")
	t.Setenv(EnvEngineToken, "")
	p, err := Parse("kvrouter", []string{"--block-size", "16"}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, "admin-from-env", p.Config.Security.AdminToken)
	assert.Equal(t, "api-from-env", p.Config.Security.APIToken)
	assert.Empty(t, p.Config.Security.EngineToken)

	p, err = Parse("kvrouter", []string{"--block-size", "16", "--admin-token-file", tokenFile(t, "admin-from-file\n"),
		"--engine-token-file", tokenFile(t, "engine-secret")}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, "admin-from-file", p.Config.Security.AdminToken, "the file wins over the variable")
	assert.Equal(t, "engine-secret", p.Config.Security.EngineToken)

	out, err := p.Config.YAML()
	require.NoError(t, err)
	for _, secret := range []string{"admin-from-file", "api-from-env", "engine-secret"} {
		assert.NotContains(t, string(out), secret)
	}
	assert.Contains(t, string(out), "admin_token_file:")
}

func TestParseSecurityErrors(t *testing.T) {
	for _, env := range []string{EnvAdminToken, EnvAPIToken, EnvEngineToken} {
		t.Setenv(env, "")
	}
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"non-loopback without a token", nil, []string{"--listen", "0.0.0.0:8090"}, "not a loopback address and no admin token"},
		{"all interfaces without a token", nil, []string{"--listen", ":8090"}, "--insecure-no-auth"},
		{"a host name is not loopback", nil, []string{"--listen", "router.example:8090"}, "no admin token"},
		{"missing token file", nil, []string{"--admin-token-file", "/nonexistent/token"}, "security.admin_token_file"},
		{"empty token file", nil, []string{"--api-token-file", "EMPTY"}, "is empty"},
		{"API token without admin token", map[string]string{EnvAPIToken: "a"}, nil, "without an admin token"},
		{"same tokens", map[string]string{EnvAPIToken: "same", EnvAdminToken: "same"}, nil, "must differ"},
		{"forwarding kvrouter's own token", map[string]string{EnvAPIToken: "a", EnvAdminToken: "b"}, []string{"--forward-client-authorization"}, "forward_client_authorization"},
		{"bad access level", nil, []string{"--metrics-auth", "public"}, "security.metrics_auth"},
		{"cert without key", nil, []string{"--tls-cert-file", "c.pem"}, "go together"},
		{"bad CIDR", nil, []string{"--allowed-engine-cidrs", "10.0.0.0/8,ten"}, "allowed_engine_cidrs"},
		{"zero body timeout", nil, []string{"--read-body-timeout", "0s"}, "read_body_timeout"},
		{"a worker's base_url", nil, []string{"--worker", "id=1,model=m,base_url=file:///etc/passwd"}, "base_url"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			args := []string{"--block-size", "16"}
			for _, a := range tc.args {
				if a == "EMPTY" {
					a = tokenFile(t, " \n")
				}
				args = append(args, a)
			}
			_, err := Parse("kvrouter", args, &bytes.Buffer{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestParseSecurityAccepts(t *testing.T) {
	for _, env := range []string{EnvAdminToken, EnvAPIToken, EnvEngineToken} {
		t.Setenv(env, "")
	}
	tests := []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"loopback without a token", nil, []string{"--listen", "127.0.0.1:8090"}},
		{"localhost without a token", nil, []string{"--listen", "localhost:8090"}},
		{"IPv6 loopback", nil, []string{"--listen", "[::1]:8090"}},
		{"non-loopback with an admin token", map[string]string{EnvAdminToken: "t"}, []string{"--listen", "0.0.0.0:8090"}},
		{"non-loopback, explicitly insecure", nil, []string{"--listen", "0.0.0.0:8090", "--insecure-no-auth"}},
		{"every option", map[string]string{EnvAdminToken: "t", EnvAPIToken: "u"}, []string{"--metrics-auth", "api", "--dashboard-auth", "admin",
			"--allowed-engine-cidrs", "10.0.0.0/8,fd00::/8", "--tls-cert-file", "c.pem", "--tls-key-file", "k.pem"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			p, err := Parse("kvrouter", append([]string{"--block-size", "16"}, tc.args...), &bytes.Buffer{})
			require.NoError(t, err)
			assert.Equal(t, tc.env[EnvAdminToken], p.Config.Security.AdminToken)
		})
	}
}

func TestSecurityFromFile(t *testing.T) {
	t.Setenv(EnvAdminToken, "")
	path := writeFile(t, "block_size: 16\nsecurity: {metrics_auth: admin, allowed_engine_cidrs: [10.0.0.0/8], admin_token_file: "+tokenFile(t, "x")+"}\n")
	p, err := Parse("kvrouter", []string{"--config", path}, &bytes.Buffer{})
	require.NoError(t, err)
	s := p.Config.Security
	assert.Equal(t, AccessAdmin, s.MetricsAuth)
	assert.Equal(t, AccessOpen, s.DashboardAuth, "default kept")
	assert.Equal(t, []string{"10.0.0.0/8"}, s.AllowedEngineCIDRs)
	assert.Equal(t, "x", s.AdminToken)
}
