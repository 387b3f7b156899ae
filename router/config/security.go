package config

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/kvhash/kvhash/router/internal/netguard"
)

// Environment variables that carry tokens (a flag's value shows in ps;
// a file or the environment does not).
const (
	EnvAdminToken  = "KVROUTER_ADMIN_TOKEN"
	EnvAPIToken    = "KVROUTER_API_TOKEN"
	EnvEngineToken = "KVROUTER_ENGINE_TOKEN"
)

// Access levels of an endpoint class (metrics_auth, dashboard_auth).
const (
	AccessOpen  = "open"  // anyone who reaches the port
	AccessAPI   = "api"   // as routing calls: the API token (or the admin token); open without an API token
	AccessAdmin = "admin" // the admin token
)

// Security is who may call kvrouter, over what, and where kvrouter
// connects on a client's word (docs/guides/security.md).
type Security struct {
	// AdminTokenFile holds the token of every state-changing call
	// (workers, events, Dynamo's /register and /unregister, request
	// frees). Unset: KVROUTER_ADMIN_TOKEN; neither: no authentication.
	AdminTokenFile string `yaml:"admin_token_file,omitempty"`
	// APITokenFile holds the token of routing and proxy calls and reads
	// of the index (KVROUTER_API_TOKEN); neither: those calls are open.
	APITokenFile string `yaml:"api_token_file,omitempty"`
	// EngineTokenFile holds the bearer token kvrouter sends to engines
	// (KVROUTER_ENGINE_TOKEN); neither: none.
	EngineTokenFile string `yaml:"engine_token_file,omitempty"`
	// ForwardClientAuthorization passes a client's Authorization header
	// on to the engine (by default it is stripped).
	ForwardClientAuthorization bool `yaml:"forward_client_authorization,omitempty"`
	// AllowedEngineCIDRs are the networks base_urls may point into,
	// checked at registration and at every dial; empty: any.
	AllowedEngineCIDRs []string `yaml:"allowed_engine_cidrs,omitempty"`
	// MetricsAuth and DashboardAuth: open, api or admin.
	MetricsAuth   string `yaml:"metrics_auth"`
	DashboardAuth string `yaml:"dashboard_auth"`
	// TLSCertFile and TLSKeyFile: serve HTTPS (both or neither).
	TLSCertFile string `yaml:"tls_cert_file,omitempty"`
	TLSKeyFile  string `yaml:"tls_key_file,omitempty"`
	// InsecureNoAuth allows a non-loopback listen address without an
	// admin token.
	InsecureNoAuth bool `yaml:"insecure_no_auth,omitempty"`

	// The tokens themselves, from the files or the environment
	// (LoadTokens) or set by a program; never printed.
	AdminToken  string `yaml:"-"`
	APIToken    string `yaml:"-"`
	EngineToken string `yaml:"-"`
}

func defaultLimits() Limits {
	return Limits{MaxBodyBytes: DefaultMaxBodyBytes, MaxTokens: DefaultMaxTokens,
		ReadHeaderTimeout: DefaultReadHeaderTimeout, ReadBodyTimeout: DefaultReadBodyTimeout, IdleTimeout: DefaultIdleTimeout}
}

// bindSecurityFlags binds the security settings and the HTTP timeouts.
func bindSecurityFlags(fs *flag.FlagSet, c *Config) {
	s := &c.Security
	fs.StringVar(&s.AdminTokenFile, "admin-token-file", s.AdminTokenFile, "file holding the admin token (state-changing calls); default: $"+EnvAdminToken)
	fs.StringVar(&s.APITokenFile, "api-token-file", s.APITokenFile, "file holding the API token (routing and proxy calls); default: $"+EnvAPIToken)
	fs.StringVar(&s.EngineTokenFile, "engine-token-file", s.EngineTokenFile, "file holding the bearer token sent to engines; default: $"+EnvEngineToken)
	fs.BoolVar(&s.ForwardClientAuthorization, "forward-client-authorization", s.ForwardClientAuthorization, "pass clients' Authorization header on to engines (default: strip it)")
	fs.Var(listFlag{&s.AllowedEngineCIDRs}, "allowed-engine-cidrs", "comma-separated networks engines' base_url may point into (empty: any)")
	fs.StringVar(&s.MetricsAuth, "metrics-auth", s.MetricsAuth, "who may read /metrics: open, api or admin")
	fs.StringVar(&s.DashboardAuth, "dashboard-auth", s.DashboardAuth, "who may read the dashboard: open, api or admin")
	fs.StringVar(&s.TLSCertFile, "tls-cert-file", s.TLSCertFile, "serve HTTPS with this certificate (PEM; with --tls-key-file)")
	fs.StringVar(&s.TLSKeyFile, "tls-key-file", s.TLSKeyFile, "the certificate's private key (PEM)")
	fs.BoolVar(&s.InsecureNoAuth, "insecure-no-auth", s.InsecureNoAuth, "allow a non-loopback --listen without an admin token")
	fs.DurationVar(&c.Limits.ReadHeaderTimeout, "read-header-timeout", c.Limits.ReadHeaderTimeout, "a client must send its request headers within this")
	fs.DurationVar(&c.Limits.ReadBodyTimeout, "read-body-timeout", c.Limits.ReadBodyTimeout, "a client must send its request body within this")
	fs.DurationVar(&c.Limits.IdleTimeout, "idle-timeout", c.Limits.IdleTimeout, "an idle keep-alive connection is closed after this")
}

// LoadTokens reads each token from its file, or else from its
// environment variable (getenv; nil: os.Getenv). Surrounding white space
// is dropped; a named file that is missing or empty is an error.
func (s *Security) LoadTokens(getenv func(string) string) error {
	if getenv == nil {
		getenv = os.Getenv
	}
	var errs []error
	for _, t := range []struct {
		key, file, env string
		dst            *string
	}{
		{"admin_token_file", s.AdminTokenFile, EnvAdminToken, &s.AdminToken},
		{"api_token_file", s.APITokenFile, EnvAPIToken, &s.APIToken},
		{"engine_token_file", s.EngineTokenFile, EnvEngineToken, &s.EngineToken},
	} {
		if t.file == "" {
			*t.dst = strings.TrimSpace(getenv(t.env))
			continue
		}
		b, err := os.ReadFile(t.file)
		if err != nil {
			errs = append(errs, fmt.Errorf("security.%s: %w", t.key, err))
			continue
		}
		if *t.dst = strings.TrimSpace(string(b)); *t.dst == "" {
			errs = append(errs, fmt.Errorf("security.%s: %s is empty", t.key, t.file))
		}
	}
	return errors.Join(errs...)
}

// IsLoopbackListen reports whether a listen address (host:port) accepts
// connections from this host only: a loopback IP or "localhost". An
// empty host (all interfaces) or another name is not.
func IsLoopbackListen(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// validateSecurity reports the security settings' mistakes.
func (c *Config) validateSecurity() []error {
	s := c.Security
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, a := range []struct{ key, v string }{{"metrics_auth", s.MetricsAuth}, {"dashboard_auth", s.DashboardAuth}} {
		switch a.v {
		case AccessOpen, AccessAPI, AccessAdmin:
		default:
			bad("security.%s: %q; want open, api or admin", a.key, a.v)
		}
	}
	if (s.TLSCertFile == "") != (s.TLSKeyFile == "") {
		bad("security: tls_cert_file and tls_key_file go together")
	}
	if s.APIToken != "" && s.AdminToken == "" {
		bad("security: an API token without an admin token would leave state-changing calls open; set %s or --admin-token-file too", EnvAdminToken)
	}
	if s.AdminToken != "" && s.AdminToken == s.APIToken {
		bad("security: the admin and API tokens must differ")
	}
	if s.ForwardClientAuthorization && s.APIToken != "" {
		bad("security.forward_client_authorization: with an API token, clients' Authorization carries kvrouter's own token; engines would receive it")
	}
	if _, err := netguard.ParseNetworks(s.AllowedEngineCIDRs); err != nil {
		bad("security.allowed_engine_cidrs: %w", err)
	}
	if c.Listen != "" && !IsLoopbackListen(c.Listen) && s.AdminToken == "" && !s.InsecureNoAuth {
		bad("listen %s: not a loopback address and no admin token; set %s or --admin-token-file "+
			"(or pass --insecure-no-auth to let anyone who reaches the port change the router's state)", c.Listen, EnvAdminToken)
	}
	if c.Limits.ReadHeaderTimeout <= 0 || c.Limits.ReadBodyTimeout <= 0 || c.Limits.IdleTimeout <= 0 {
		bad("limits: read_header_timeout, read_body_timeout and idle_timeout must be > 0")
	}
	return errs
}
