package serve

import (
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvhash/kvhash/router/config"
	"github.com/kvhash/kvhash/router/internal/httpapi"
)

// access is what a request needs (docs/guides/security.md).
type access int

const (
	accessOpen  access = iota // health: anyone who reaches the port
	accessAPI                 // routing, proxying, reads of the index: the API token, when one is set
	accessAdmin               // every state change: the admin token, when one is set
)

// authGuard checks bearer tokens. It keeps only the tokens' SHA-256, and
// compares digests in constant time: equal lengths, so neither a token's
// bytes nor its length leak through the time a wrong guess takes.
type authGuard struct {
	admin, api         [sha256.Size]byte
	haveAdmin, haveAPI bool
	metrics, dashboard access
	refused            *prometheus.CounterVec
}

func newAuthGuard(sec config.Security) *authGuard {
	g := &authGuard{
		haveAdmin: sec.AdminToken != "", haveAPI: sec.APIToken != "",
		metrics: accessOf(sec.MetricsAuth), dashboard: accessOf(sec.DashboardAuth),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kvrouter_http_unauthorized_total", Help: "HTTP requests refused for a missing or wrong token, by reason.",
		}, []string{"reason"}),
	}
	g.admin, g.api = sha256.Sum256([]byte(sec.AdminToken)), sha256.Sum256([]byte(sec.APIToken))
	return g
}

func accessOf(level string) access {
	switch level {
	case config.AccessAdmin:
		return accessAdmin
	case config.AccessAPI:
		return accessAPI
	}
	return accessOpen
}

// on reports whether any token is set (with none, every call is open).
func (g *authGuard) on() bool { return g.haveAdmin || g.haveAPI }

// classify names what a request needs, by method and path. Anything
// that is not a known read or routing call is a state change: a new
// endpoint is closed until it is classified here.
func (g *authGuard) classify(r *http.Request) access {
	p := r.URL.Path
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		switch {
		case p == "/health" || p == "/healthz" || p == "/readyz":
			return accessOpen
		case p == "/metrics":
			return g.metrics
		case p == "/" || p == "/v1/dashboard" || strings.HasPrefix(p, "/dashboard/"):
			return g.dashboard
		}
		return accessAPI // GET /v1/workers, /workers, /dump
	}
	if r.Method == http.MethodPost {
		switch p {
		case "/v1/route", "/v1/completions", "/v1/chat/completions", "/query", "/query_by_hash":
			return accessAPI
		}
	}
	return accessAdmin
}

// check answers nil when r may pass, or the error to answer.
func (g *authGuard) check(r *http.Request) *httpapi.Error {
	need := g.classify(r)
	switch {
	case need == accessOpen:
		return nil
	case need == accessAPI && !g.haveAPI:
		return nil
	case need == accessAdmin && !g.haveAdmin:
		return nil
	}
	token, ok := bearer(r.Header.Get("Authorization"))
	if !ok {
		g.refused.WithLabelValues("missing").Inc()
		return unauthorized("missing_token", "this endpoint needs a token: send Authorization: Bearer TOKEN")
	}
	sum := sha256.Sum256([]byte(token))
	isAdmin := g.haveAdmin && subtle.ConstantTimeCompare(sum[:], g.admin[:]) == 1
	isAPI := g.haveAPI && subtle.ConstantTimeCompare(sum[:], g.api[:]) == 1
	switch {
	case isAdmin, need == accessAPI && isAPI:
		return nil
	case isAPI: // a valid token, of the wrong kind
		g.refused.WithLabelValues("insufficient").Inc()
		return httpapi.NewError(http.StatusForbidden, "permission_error", "admin_token_required",
			"this endpoint changes the router's state: it needs the admin token, not the API token")
	}
	g.refused.WithLabelValues("invalid").Inc()
	return unauthorized("invalid_token", "the bearer token is not valid for this endpoint")
}

func unauthorized(code, msg string) *httpapi.Error {
	return httpapi.NewError(http.StatusUnauthorized, "authentication_error", code, "%s", msg)
}

// bearer reads "Bearer TOKEN" (the scheme in any case).
func bearer(h string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// guard puts authentication and the body read deadline in front of
// every endpoint, the proxy's included.
func (s *Server) guard(next http.Handler) http.Handler {
	g := newAuthGuard(s.cfg.Security)
	s.reg.MustRegister(g.refused)
	bodyTimeout := s.cfg.Limits.ReadBodyTimeout
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.on() {
			if err := g.check(r); err != nil {
				w.Header().Set("WWW-Authenticate", `Bearer realm="kvrouter"`)
				if err.Code == "invalid_token" {
					w.Header().Set("WWW-Authenticate", `Bearer realm="kvrouter", error="invalid_token"`)
				}
				writeError(w, err)
				return
			}
		}
		limitBodyTime(w, r, bodyTimeout)
		next.ServeHTTP(w, r)
	})
}

// warnInsecure says once, at start, that a non-loopback listen address
// serves without authentication (the operator's explicit choice:
// --insecure-no-auth; config refuses it otherwise).
func warnInsecure(cfg config.Config, log *slog.Logger) {
	if cfg.Security.AdminToken == "" && cfg.Security.InsecureNoAuth && !config.IsLoopbackListen(cfg.Listen) {
		log.Warn("kvrouter: --insecure-no-auth: serving on a non-loopback address without authentication; anyone who reaches it can register workers and send events",
			"listen", cfg.Listen)
	}
}
