// Package serve is kvrouter's service: the HTTP API (kvrouter's own and
// Dynamo's standalone indexer's), Prometheus metrics, health, snapshots,
// and the wiring of ingest, indexer and route.
package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/config"
	"github.com/kvhash/kvhash/router/epp"
	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/ingest"
	"github.com/kvhash/kvhash/router/internal/netguard"
	"github.com/kvhash/kvhash/router/proxy"
	"github.com/kvhash/kvhash/router/route"
	"github.com/kvhash/kvhash/router/route/policy"
)

// Options configure a Server.
type Options struct {
	Config config.Config
	// Logger: nil discards.
	Logger *slog.Logger
	// NewIngest builds the ZeroMQ side; nil: HTTP publishers only.
	NewIngest NewIngestFunc
	// Now is the clock of the indexer and router (tests); nil: time.Now.
	Now func() time.Time
	// Seed seeds the router's tie-breaks (tests that compare decisions);
	// 0: random.
	Seed uint64
	// ConnectWarnAfter: a worker's stream not connected this long after
	// its registration is logged (a WARN, once); zero: 30s.
	ConnectWarnAfter time.Duration
}

// Server is one kvrouter: the indexer, the router, the ingest layer and
// the HTTP handler over them. Start it, serve Handler(), Shutdown it.
type Server struct {
	cfg    config.Config
	log    *slog.Logger
	ix     *indexer.Indexer
	rt     *route.Router
	ing    Ingest // nil without ZeroMQ
	reg    *prometheus.Registry
	m      *metrics
	caps   *caps // the bounds' metrics (caps.go)
	routes http.Handler
	px     *proxy.Proxy       // the OpenAI proxy and dashboard in front of routes
	nets   *netguard.Networks // where engines may live (base_url, endpoints)
	// connecting: the ranks whose stream has not connected (connecting.go).
	connecting *connectWatch

	// The gateway endpoint picker (--epp-listen; epp.go), or nil.
	epp     *epp.Server
	eppAddr net.Addr

	// mu serializes registry changes (the indexer's registration and the
	// subscriptions of its ranks move together) and guards endpoints.
	mu        sync.Mutex
	endpoints map[uint64]map[uint32]rankStream

	ready struct {
		config, subscriptions, snapshot atomic.Bool
	}
	boundAddr net.Addr // the bound endpoint's address, once bound

	stop     chan struct{}
	stopOnce sync.Once
	loops    sync.WaitGroup
}

// rankStream is where one rank publishes.
type rankStream struct {
	Endpoint, Replay string
}

// New builds a Server; it serves nothing until Start.
func New(opts Options) (*Server, error) {
	cfg := opts.Config
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: log, endpoints: map[uint64]map[uint32]rankStream{}, stop: make(chan struct{})}
	s.connecting = newConnectWatch(opts.ConnectWarnAfter, opts.Now)
	mode, err := stabilityMode(cfg.Index.StabilityMode)
	if err != nil {
		return nil, err
	}
	if s.nets, err = netguard.ParseNetworks(cfg.Security.AllowedEngineCIDRs); err != nil {
		return nil, fmt.Errorf("serve: allowed engine networks: %w", err)
	}
	warnInsecure(cfg, log)
	ix, err := indexer.New(indexer.Options{
		BlockSize:        cfg.BlockSize,
		Mode:             mode,
		IndexMedia:       cfg.Index.Media,
		DegradedSettle:   cfg.Index.DegradedSettle,
		QuarantineSettle: cfg.Index.QuarantineSettle,
		EngineHashSeeds:  cfg.Index.EngineHashSeeds,
		VerifyChained:    cfg.Index.VerifyChainedHashes,
		MaxRankBlocks:    cfg.Index.MaxRankBlocks,
		// Bound late: the ingest layer is built over the indexer.
		Replay: indexer.ReplayFunc(s.requestReplay),
		Logger: log,
		Now:    opts.Now,
		// A stream this router subscribes to itself shows "connecting"
		// until it connects (a replica on the event plane sees none).
		AwaitConnect: cfg.NATS.URL == "" && opts.NewIngest != nil,
	})
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	s.ix = ix
	params := route.Params{
		OverlapScoreCredit: cfg.Routing.OverlapScoreCredit,
		PrefillLoadScale:   cfg.Routing.PrefillLoadScale,
		Temperature:        cfg.Routing.Temperature,
		Cost:               routerCost(cfg.Routing.Policy),
	}
	if s.rt, err = route.New(ix, route.Options{Params: &params, RequestTTL: cfg.Routing.RequestTTL, Now: opts.Now, Seed: opts.Seed}); err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	if cfg.NATS.URL != "" {
		// One replica of several (eventplane.go): the plane is the ingest layer.
		if s.ing, err = s.newEventPlane(); err != nil {
			return nil, err
		}
	} else if opts.NewIngest != nil {
		if s.ing, err = opts.NewIngest(ix, log); err != nil {
			return nil, fmt.Errorf("serve: ingest: %w", err)
		}
	}
	s.reg, s.m = newMetrics(s)
	s.caps = newCaps(s.reg, ix)
	if p := s.EventPlane(); p != nil {
		s.reg.MustRegister(p.Collector("kvrouter")) // kvrouter_eventplane_*
	}
	if st, ok := s.ing.(interface{ Stats() *ingest.Stats }); ok {
		// The wire's own counters (messages, malformed by reason, gaps by
		// outcome, replays, connects) as kvrouter_ingest_*.
		s.reg.MustRegister(ingest.NewCollector("kvrouter", st.Stats()))
	}
	s.routes = s.buildHandler()
	if err := s.attachProxy(); err != nil {
		return nil, err
	}
	s.routes = s.guard(s.routes)
	if err := s.attachEPP(); err != nil {
		return nil, err
	}
	s.ready.config.Store(true)
	return s, nil
}

func stabilityMode(name string) (core.Mode, error) {
	switch name {
	case "":
		return core.ModeFromEnvironment, nil
	case "warn":
		return core.ModeWarn, nil
	case "enforce":
		return core.ModeEnforce, nil
	}
	return 0, fmt.Errorf("serve: stability mode %q: want warn or enforce", name)
}

// Indexer and Router expose the server's parts (tests, benchmarks).
func (s *Server) Indexer() *indexer.Indexer { return s.ix }

// Router is the server's router.
func (s *Server) Router() *route.Router { return s.rt }

// BoundAddr is the address of the bound endpoint (--bind), nil if none.
func (s *Server) BoundAddr() net.Addr { return s.boundAddr }

// Handler is the HTTP API.
func (s *Server) Handler() http.Handler { return s.routes }

// Start loads the snapshot, registers the config's workers, binds the
// bound endpoint and starts the periodic loops. A snapshot it cannot
// use, a worker of the config it cannot register (every one is named)
// and a bind failure are errors; the first two wrap ErrStart.
func (s *Server) Start() error {
	if err := s.loadSnapshot(); err != nil {
		return err
	}
	var bad []error
	for _, w := range s.cfg.Workers {
		spec := indexer.WorkerSpec{
			WorkerID: w.WorkerID, Model: w.Model, Tenant: w.Tenant, Endpoint: w.Endpoint,
			ReplayEndpoint: w.ReplayEndpoint, DPSize: w.DPSize, Topic: w.Topic, BaseURL: w.BaseURL,
			EngineHash: w.EngineHash,
		}
		if _, err := s.addWorker(spec); err != nil {
			bad = append(bad, fmt.Errorf("worker %d of the config: %w", w.WorkerID, err))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("serve: %w: %w", ErrStart, errors.Join(bad...))
	}
	if s.cfg.Bind != "" {
		b, ok := s.ing.(Binder)
		if !ok {
			return errors.New("serve: --bind needs an ingest layer that binds")
		}
		addr, err := b.Bind(ingest.Binding{Endpoint: s.cfg.Bind, Resolve: s.resolveTopic, ReplayEndpoint: s.boundReplay})
		if err != nil {
			return fmt.Errorf("serve: bind %s: %w", s.cfg.Bind, err)
		}
		s.boundAddr = addr
		s.log.Info("kvrouter: bound for engines to connect", "endpoint", s.cfg.Bind, "addr", addr.String())
	}
	s.ready.subscriptions.Store(true)
	s.px.Start()
	if err := s.startEPP(); err != nil {
		return err
	}
	s.loops.Add(1)
	go s.expiryLoop()
	if s.cfg.Snapshot.Path != "" && s.cfg.Snapshot.Interval > 0 {
		s.loops.Add(1)
		go s.snapshotLoop()
	}
	return nil
}

// Shutdown stops the loops and the subscribers, then writes the
// snapshot. Stop the HTTP server first so no request races the snapshot.
func (s *Server) Shutdown(ctx context.Context) error {
	var errs []error
	s.stopOnce.Do(func() {
		close(s.stop)
		s.stopEPP()
		_ = s.px.Close()
		done := make(chan struct{})
		go func() { s.loops.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("serve: waiting for the loops: %w", ctx.Err()))
		}
		if s.ing != nil {
			if err := s.ing.Close(); err != nil {
				errs = append(errs, fmt.Errorf("serve: closing ingest: %w", err))
			}
		}
		if err := s.writeSnapshot(); err != nil {
			errs = append(errs, err)
		}
	})
	return errors.Join(errs...)
}

// expiryLoop frees requests never freed, so an idle router releases load,
// and lets degraded and quarantined ranks whose time is up settle even
// when their engines send nothing more.
func (s *Server) expiryLoop() {
	defer s.loops.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.rt.Expire()
			s.ix.Settle()
			s.warnUnconnected()
		}
	}
}

// requestReplay is the indexer's ReplayRequester: the ingest layer's.
func (s *Server) requestReplay(src ingest.Source, fromSeq uint64) error {
	if s.ing == nil {
		return errors.New("no ZeroMQ ingest layer: nothing to replay from")
	}
	s.m.replayRequests.Inc()
	return s.ing.RequestReplay(src, fromSeq)
}

// routerCost is the cost model of the service's router (/v1/route and the
// proxy's kvrouter policy): the predicted TTFT, unless the configured
// policy is dynamo, which keeps Dynamo's default cost with its knobs.
func routerCost(policyName string) string {
	if policyName == policy.Dynamo {
		return route.CostDynamo
	}
	return route.CostTTFT
}
