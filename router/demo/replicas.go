package demo

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kvhash/kvhash/router/config"
	"github.com/kvhash/kvhash/router/eventplane"
)

// StartReplicas runs n kvrouter replicas on one embedded event plane
// (docs/guides/scale-out.md) behind one front address, cfg.Listen: the
// proxy's requests go to the replicas in turn (as a load balancer would
// send them), worker registrations to every replica (each one registers
// its fleet), and everything else (the dashboard, the API) to the first.
// The returned Router is the front, its Server the first replica.
func StartReplicas(cfg config.Config, n int, log *slog.Logger) (*Router, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler) // as serve.New takes a nil logger
	}
	if n < 2 {
		return StartRouter(cfg, log)
	}
	dir, err := os.MkdirTemp("", "kvrouter-demo-nats-*")
	if err != nil {
		return nil, fmt.Errorf("demo: replicas: %w", err)
	}
	nats, err := eventplane.StartEmbedded(dir, 0)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("demo: replicas: %w", err)
	}
	var reps []*Router
	stopAll := func() error {
		var errs []error
		for i := len(reps) - 1; i >= 0; i-- {
			errs = append(errs, reps[i].Stop())
		}
		nats.Shutdown()
		_ = os.RemoveAll(dir)
		return errors.Join(errs...)
	}
	for i := range n {
		rc := cfg
		rc.Listen = "127.0.0.1:0"
		rc.NATS = config.NATS{URL: nats.URL(), ReplicaID: "replica-" + strconv.Itoa(i+1), LeaseTTL: 2 * time.Second}
		r, err := StartRouter(rc, log.With("replica", i+1))
		if err != nil {
			_ = stopAll()
			return nil, fmt.Errorf("demo: replica %d: %w", i+1, err)
		}
		reps = append(reps, r)
	}
	front, err := newFront(reps)
	if err != nil {
		_ = stopAll()
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		_ = stopAll()
		return nil, fmt.Errorf("kvrouter: listen %s: %w", cfg.Listen, err)
	}
	r := &Router{Server: reps[0].Server, URL: "http://" + ln.Addr().String(), AdminToken: cfg.Security.AdminToken,
		hs: &http.Server{Handler: front, ReadHeaderTimeout: 10 * time.Second}, stopExtra: stopAll}
	go func() { _ = r.hs.Serve(ln) }()
	return r, nil
}

// front is the demo's stand-in for a load balancer in front of the
// replicas.
type front struct {
	proxies []*httputil.ReverseProxy
	next    atomic.Uint64
}

func newFront(reps []*Router) (*front, error) {
	f := &front{}
	for _, r := range reps {
		u, err := url.Parse(r.URL)
		if err != nil {
			return nil, fmt.Errorf("demo: replica url %q: %w", r.URL, err)
		}
		rp := httputil.NewSingleHostReverseProxy(u)
		rp.FlushInterval = -1 // streamed completions pass through as they come
		f.proxies = append(f.proxies, rp)
	}
	return f, nil
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasPrefix(r.URL.Path, "/v1/workers") && r.Method != http.MethodGet:
		f.fanOut(w, r)
	case r.Method == http.MethodPost && (r.URL.Path == "/v1/completions" || r.URL.Path == "/v1/chat/completions"):
		i := f.next.Add(1) % uint64(len(f.proxies))
		f.proxies[i].ServeHTTP(w, r)
	default:
		f.proxies[0].ServeHTTP(w, r)
	}
}

// fanOut sends a registry change to every replica; the first replica's
// answer is the client's, the others' are checked.
func (f *front) fanOut(w http.ResponseWriter, r *http.Request) {
	body, err := readAll(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for i := len(f.proxies) - 1; i >= 1; i-- {
		rec := &discardWriter{h: http.Header{}}
		f.proxies[i].ServeHTTP(rec, withBody(r, body))
		if rec.code/100 != 2 {
			http.Error(w, fmt.Sprintf("replica %d answered %d", i+1, rec.code), http.StatusBadGateway)
			return
		}
	}
	f.proxies[0].ServeHTTP(w, withBody(r, body))
}
