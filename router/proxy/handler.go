package proxy

import (
	"embed"
	"fmt"
	"io/fs"
	"net/http"
	"runtime/debug"

	"github.com/kvhash/kvhash/router/internal/httpapi"
)

//go:embed dashboard
var dashboardFiles embed.FS

// Wrap serves the proxy's endpoints in front of next (kvrouter's API):
//
//	POST /v1/completions, POST /v1/chat/completions   the proxy
//	GET  /v1/dashboard                                the dashboard's JSON
//	GET  /  and  /dashboard/...                       the dashboard page
//
// Every other request goes to next.
func (p *Proxy) Wrap(next http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", p.api(func(w http.ResponseWriter, r *http.Request) error {
		return p.serveCompletion(w, r, "/v1/completions", false)
	}))
	mux.HandleFunc("POST /v1/chat/completions", p.api(func(w http.ResponseWriter, r *http.Request) error {
		return p.serveCompletion(w, r, "/v1/chat/completions", true)
	}))
	mux.HandleFunc("GET /v1/dashboard", p.api(func(w http.ResponseWriter, _ *http.Request) error {
		writeJSON(w, http.StatusOK, p.Dashboard())
		return nil
	}))
	// Another method on the proxy's paths is a 405 naming the one allowed
	// (kvrouter's API behind would answer 404: it does not know them).
	for path, allow := range map[string]string{"/v1/completions": http.MethodPost, "/v1/chat/completions": http.MethodPost, "/v1/dashboard": http.MethodGet} {
		mux.HandleFunc(path, p.api(func(w http.ResponseWriter, r *http.Request) error {
			w.Header().Set("Allow", allow)
			return httpapi.MethodNotAllowed("%s is not allowed on %s; allowed: [%s]", r.Method, r.URL.Path, allow)
		}))
	}
	static, err := fs.Sub(dashboardFiles, "dashboard")
	if err != nil {
		panic(fmt.Sprintf("proxy: the embedded dashboard: %v", err)) // a build mistake
	}
	files := http.FileServerFS(static)
	mux.Handle("GET /dashboard/", http.StripPrefix("/dashboard/", files))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, static, "index.html")
	})
	mux.Handle("/", next)
	return mux
}

// api adapts a handler returning an error to OpenAI's error object, and
// recovers a panic into a 500 (logged with its stack): one bad request
// never takes kvrouter down.
func (p *Proxy) api(h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler { //nolint:errorlint // the sentinel, as net/http compares it
					panic(v)
				}
				p.log.Error("kvrouter: proxy handler panicked", "path", r.URL.Path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				writeError(w, fmt.Errorf("internal error: %v", v))
			}
		}()
		if err := h(w, r); err != nil {
			writeError(w, err)
		}
	}
}
