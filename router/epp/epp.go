package epp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/proxy"
	"github.com/kvhash/kvhash/router/route"
)

// DefaultMaxBodyBytes caps a request body the picker holds.
const DefaultMaxBodyBytes = 8 << 20

// ServiceName is the ext_proc gRPC service, also a health service name.
const ServiceName = "envoy.service.ext_proc.v3.ExternalProcessor"

// Health service names gateways check besides ServiceName.
const (
	HealthLiveness  = "liveness"
	HealthReadiness = "readiness"
)

// ErrSaturated is what an Admit hook wraps to have a request shed with a
// 429; any other error from it is a 503. It is the proxy's (Proxy.Admit
// wraps it).
var ErrSaturated = proxy.ErrSaturated

// EngineSlots are per-engine request slots shared with another front end
// (proxy.Proxy implements them).
type EngineSlots interface {
	SlotFree(worker uint64) bool
	TakeSlot(worker uint64) bool
	// GiveSlot returns a slot; model is the request's (a front end may
	// have requests for it waiting).
	GiveSlot(worker uint64, model string)
}

// Options configure a Server.
type Options struct {
	Indexer *indexer.Indexer
	Router  *route.Router
	// Tokenize turns a text prompt or chat messages into token ids (the
	// proxy's PromptTokens); nil: only token-id prompts are routed, others
	// are answered 400.
	Tokenize func(ctx context.Context, p proxy.Prompt) ([]uint32, error)
	// Admit, when set, is asked before each pick: an error wrapping
	// ErrSaturated sheds the request with a 429 (the overload
	// backpressure plugs in here), another error is a 503.
	Admit func(model string) error
	// Hold, when set, may hold a request before its pick while the fleet
	// is saturated (kvrouter's proxy: Proxy.Hold, which holds while every
	// engine has a step's prefill queued, and lets held requests go by
	// highest response ratio); done is called once the pick is made. An
	// error wrapping ErrSaturated sheds the request with a 429.
	Hold func(ctx context.Context, model string, tokens []uint32, cacheSalt string) (done func(), err error)
	// Kick, when set, is told a model's load ended somewhere (a first
	// token, a request's end), so that a held request may go.
	Kick func(model string)
	// Slots, when set, are the engines' request slots the picker shares
	// with another front end (kvrouter's proxy: the same EngineSlots an
	// engine): a pick goes only to an engine with a free slot, takes it,
	// and gives it back when the request ends.
	Slots EngineSlots
	// MaxInFlightPerWorker: with Admit nil and this > 0, a request is shed
	// (429) when every eligible worker already has this many requests in
	// flight through the picker.
	MaxInFlightPerWorker int
	// Fallbacks: how many more endpoints, next cheapest first, follow the
	// pick in the answer (ip:port,ip:port); for the override_host design.
	Fallbacks int
	// MaxBodyBytes caps a request body; zero: DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Registerer gets the picker's metrics (kvrouter_epp_*); nil: none.
	Registerer prometheus.Registerer
	// TLS: serve gRPC over TLS (a self-signed certificate when nil
	// Certificates; SelfSignedTLS makes one); nil: plaintext h2c.
	TLS *tls.Config
	// Logger: nil discards.
	Logger *slog.Logger
	// Now is the clock (tests); nil: time.Now.
	Now func() time.Time
}

// Server is the endpoint picker. Serve it on a listener; Stop it.
type Server struct {
	opts    Options
	log     *slog.Logger
	eps     *endpoints
	m       *metrics
	grpc    *grpc.Server
	health  *health.Server
	flights inflight
}

// New builds a picker over a kvrouter's indexer and router.
func New(opts Options) (*Server, error) {
	if opts.Indexer == nil || opts.Router == nil {
		return nil, errors.New("epp: an indexer and a router are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.Fallbacks < 0 {
		return nil, fmt.Errorf("epp: fallbacks %d; want >= 0", opts.Fallbacks)
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("epp: metrics: %w", err)
	}
	var gopts []grpc.ServerOption
	if opts.TLS != nil {
		gopts = append(gopts, grpc.Creds(credentials.NewTLS(opts.TLS)))
	}
	s := &Server{
		opts: opts, log: opts.Logger, eps: newEndpoints(opts.Indexer, opts.Now), m: m,
		grpc: grpc.NewServer(gopts...), health: health.NewServer(),
		flights: inflight{n: map[uint64]int{}},
	}
	extprocv3.RegisterExternalProcessorServer(s.grpc, s)
	healthpb.RegisterHealthServer(s.grpc, s.health)
	for _, name := range []string{"", HealthLiveness, HealthReadiness, ServiceName} {
		s.health.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	return s, nil
}

// Serve answers gateways on l until Stop; it returns nil after Stop.
func (s *Server) Serve(l net.Listener) error {
	err := s.grpc.Serve(l)
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// Stop reports not serving, then ends every stream: gateways fail over
// (or fail open) as configured. Requests in flight are freed as their
// streams end.
func (s *Server) Stop() {
	s.health.Shutdown()
	s.grpc.Stop()
}

// Process is the ext_proc stream of one HTTP request.
func (s *Server) Process(stream extprocv3.ExternalProcessor_ProcessServer) error {
	x := newExchange(s, stream)
	defer x.release()
	return x.run()
}

// inflight counts the requests in flight through the picker per worker,
// for the built-in saturation check.
type inflight struct {
	mu sync.Mutex
	n  map[uint64]int
}

func (f *inflight) add(id uint64, d int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[id]+d <= 0 {
		delete(f.n, id)
		return
	}
	f.n[id] += d
}

func (f *inflight) get(id uint64) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n[id]
}
