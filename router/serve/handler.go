package serve

import (
	"fmt"
	"net/http"
	"runtime/debug"
	"strconv"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kvhash/kvhash/router/internal/httpapi"
)

// buildHandler mounts every endpoint behind the panic and metrics
// middleware.
func (s *Server) buildHandler() http.Handler {
	mux := http.NewServeMux()
	api := func(pattern string, h func(http.ResponseWriter, *http.Request) error) {
		mux.Handle(pattern, s.apiHandler(h))
	}
	// kvrouter's API.
	api("POST /v1/workers", s.postWorker)
	api("GET /v1/workers", s.getWorkers)
	api("GET /v1/workers/{worker_id}", s.getWorker)
	api("DELETE /v1/workers/{worker_id}", s.deleteWorker)
	api("POST /v1/route", s.postRoute)
	api("POST /v1/requests/{request_id}/prefill_done", s.postPrefillDone)
	api("DELETE /v1/requests/{request_id}", s.deleteRequest)
	api("POST /v1/events", s.postEvents)
	// Dynamo's standalone indexer's API.
	mux.Handle("POST /register", s.dynamoHandler(s.dynRegister))
	mux.Handle("POST /unregister", s.dynamoHandler(s.dynUnregister))
	mux.Handle("GET /workers", s.dynamoHandler(s.dynWorkers))
	mux.Handle("POST /query", s.dynamoHandler(s.dynQuery))
	mux.Handle("POST /query_by_hash", s.dynamoHandler(s.dynQueryByHash))
	mux.Handle("GET /dump", s.dynamoHandler(s.dynDump))
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	// Operations.
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	// Anything else: a JSON 404, or 405 for a known path with another
	// method (the catch-all pattern wins over the mux's plain-text 405).
	api("/", func(w http.ResponseWriter, r *http.Request) error {
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
			probe := r.Clone(r.Context())
			probe.Method = m
			if _, pattern := mux.Handler(probe); pattern != "/" && m != r.Method {
				w.Header().Add("Allow", m)
			}
		}
		if allow := w.Header().Values("Allow"); len(allow) > 0 {
			return httpapi.MethodNotAllowed("%s is not allowed on %s; allowed: %v", r.Method, r.URL.Path, allow)
		}
		return notFound("unknown_endpoint", "no such endpoint: %s %s", r.Method, r.URL.Path)
	})
	return s.middleware(mux)
}

// apiHandler adapts a handler that returns an error to the JSON error
// body.
func (s *Server) apiHandler(h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			writeError(w, err)
		}
	}
}

// statusWriter remembers the status for the request counter.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// middleware recovers panics (logged with the stack, answered 500: a bug
// in one handler never takes the server down) and counts requests by
// pattern and status.
func (s *Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.m.panics.Inc()
				s.log.Error("kvrouter: HTTP handler panicked", "method", r.Method, "path", r.URL.Path,
					"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				if sw.status == 0 {
					writeError(sw, internalError(fmt.Errorf("internal error: %v", v)))
				}
			}
			// The mux set the matched pattern on the request ("" when a
			// panic came before it matched).
			s.m.httpRequests.WithLabelValues(r.Pattern, strconv.Itoa(sw.status)).Inc()
		}()
		next.ServeHTTP(sw, r)
	})
}

// healthz: the process is alive and serving.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz: the config is loaded, the snapshot loaded (or skipped) and the
// subscriptions started; 503 until then, naming what is missing.
func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	checks := map[string]bool{
		"config":        s.ready.config.Load(),
		"snapshot":      s.ready.snapshot.Load(),
		"subscriptions": s.ready.subscriptions.Load(),
	}
	planeWhy := s.eventPlaneReady(checks)
	status := http.StatusOK
	for _, ok := range checks {
		if !ok {
			status = http.StatusServiceUnavailable
		}
	}
	state := "ready"
	if status != http.StatusOK {
		state = "not_ready"
	}
	body := map[string]any{"status": state, "checks": checks}
	if planeWhy != "" {
		body["event_plane"] = planeWhy
	}
	writeJSON(w, status, body)
}
