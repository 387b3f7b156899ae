package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/internal/netguard"
	"github.com/kvhash/kvhash/router/route"
)

// Defaults of Options.
const (
	DefaultHealthInterval = time.Second
	DefaultHealthTimeout  = 2 * time.Second
	DefaultHealthFailures = 2
	DefaultHeaderTimeout  = 120 * time.Second
	DefaultMaxBodyBytes   = 8 << 20
)

// Options configure a Proxy.
type Options struct {
	Indexer *indexer.Indexer
	Router  *route.Router
	// Logger: nil discards.
	Logger *slog.Logger
	// Client talks to engines; nil: a client whose transport gives up
	// when an engine sends no response headers within HeaderTimeout.
	Client *http.Client
	// HeaderTimeout: how long an engine may take to start answering
	// before the client gets a 504; zero: DefaultHeaderTimeout.
	HeaderTimeout time.Duration
	// HealthInterval and HealthTimeout pace the GET /health poller;
	// zero: the defaults. A negative interval turns the poller off.
	HealthInterval, HealthTimeout time.Duration
	// HealthFailures: consecutive failed checks that take a worker out of
	// rotation; zero: DefaultHealthFailures.
	HealthFailures int
	// MaxBodyBytes caps a request body; zero: DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// DefaultPolicy is used when a request names none; "": PolicyKV.
	DefaultPolicy Policy
	// EngineToken, when set, is sent to engines as Authorization: Bearer
	// (completions, tokenize, health checks).
	EngineToken string
	// ForwardClientAuthorization passes a client's own Authorization
	// header on to the engine (instead of EngineToken); by default a
	// client's credentials never leave kvrouter.
	ForwardClientAuthorization bool
	// AllowedNetworks: the default client dials only addresses inside
	// them, whatever a base_url's name resolves to; nil: any.
	AllowedNetworks *netguard.Networks
	// EngineSlots: requests the proxy sends an engine at once, what it
	// runs (max_num_seqs) plus what it may queue; zero:
	// DefaultMaxNumSeqs + DefaultEngineQueue. Also the size of the
	// connection pool to each engine.
	EngineSlots int
	// QueueLimit: requests that may wait for a slot (all models); zero:
	// DefaultQueueLimit. QueueTimeout: how long one may wait before its
	// 429; zero: DefaultQueueTimeout. See admission.go.
	QueueLimit   int
	QueueTimeout time.Duration
}

// sideConnsPerEngine bounds the health checks' and /tokenize's
// connections to one engine.
const sideConnsPerEngine = 32

// Proxy forwards OpenAI completion requests to the engine each policy
// picks; see the package doc. Start its health poller with Start, stop it
// with Close.
type Proxy struct {
	opts   Options
	ix     *indexer.Indexer
	rt     *route.Router
	log    *slog.Logger
	client *http.Client
	// side talks to engines outside the requests' slots: health checks
	// and /tokenize, which must never wait for a slot's connection (a
	// health check that did would take a saturated engine out of
	// rotation).
	side  *http.Client
	stats *Stats
	adm   admission

	rrNext atomic.Uint64

	mu       sync.RWMutex // reads on every route (baseURL, slots): shared
	rng      *rand.Rand
	inflight map[uint64]int
	// baseURLs caches each worker's base URL (refreshed by the poller),
	// so the request path never builds a full WorkerInfo.
	baseURLs map[uint64]string
	failures map[uint64]int // consecutive failed health checks
	peers    *peers         // the peers' policies (peers.go)

	stop      chan struct{}
	stopOnce  sync.Once
	loopsDone sync.WaitGroup
}

// New builds a Proxy over a server's indexer and router.
func New(opts Options) (*Proxy, error) {
	if opts.Indexer == nil || opts.Router == nil {
		return nil, errors.New("proxy: an indexer and a router are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.HeaderTimeout <= 0 {
		opts.HeaderTimeout = DefaultHeaderTimeout
	}
	if opts.HealthInterval == 0 {
		opts.HealthInterval = DefaultHealthInterval
	}
	if opts.HealthTimeout <= 0 {
		opts.HealthTimeout = DefaultHealthTimeout
	}
	if opts.HealthFailures <= 0 {
		opts.HealthFailures = DefaultHealthFailures
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.EngineSlots <= 0 {
		opts.EngineSlots = DefaultMaxNumSeqs + DefaultEngineQueue
	}
	if opts.QueueLimit <= 0 {
		opts.QueueLimit = DefaultQueueLimit
	}
	if opts.QueueTimeout <= 0 {
		opts.QueueTimeout = DefaultQueueTimeout
	}
	if opts.DefaultPolicy == "" {
		opts.DefaultPolicy = PolicyKV
	}
	pol, err := ParsePolicy(string(opts.DefaultPolicy))
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	opts.DefaultPolicy = pol
	client, side := opts.Client, opts.Client
	if client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.ResponseHeaderTimeout = opts.HeaderTimeout
		// Engines are few and hot: keep connections to each open, at most
		// as many as the requests an engine may have from the proxy.
		tr.MaxIdleConnsPerHost = min(256, opts.EngineSlots)
		tr.MaxConnsPerHost = opts.EngineSlots
		tr.DialContext = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second, Control: opts.AllowedNetworks.Control}).DialContext
		if !opts.AllowedNetworks.Any() {
			tr.Proxy = nil // through an HTTP_PROXY the check would see the proxy's address, not the engine's
		}
		client = &http.Client{Transport: tr}
		st := tr.Clone()
		st.MaxConnsPerHost, st.MaxIdleConnsPerHost = sideConnsPerEngine, sideConnsPerEngine
		side = &http.Client{Transport: st}
	}
	return &Proxy{
		opts: opts, ix: opts.Indexer, rt: opts.Router, log: opts.Logger, client: client, side: side,
		stats:    newStats(time.Now),
		adm:      admission{queues: map[string][]*waiter{}},
		rng:      rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		inflight: map[uint64]int{},
		baseURLs: map[uint64]string{},
		failures: map[uint64]int{},
		peers:    newPeers(),
		stop:     make(chan struct{}),
	}, nil
}

// Stats is the proxy's per-policy bookkeeping (the dashboard's).
func (p *Proxy) Stats() *Stats { return p.stats }

// Start starts the health poller (unless turned off).
func (p *Proxy) Start() {
	if p.opts.HealthInterval < 0 {
		return
	}
	p.loopsDone.Add(1)
	go p.healthLoop()
}

// Close stops the health poller and waits for it.
func (p *Proxy) Close() error {
	p.stopOnce.Do(func() { close(p.stop) })
	p.loopsDone.Wait()
	return nil
}

// Inflight returns the requests in flight through the proxy per worker.
func (p *Proxy) Inflight() map[uint64]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[uint64]int, len(p.inflight))
	for id, n := range p.inflight {
		if n > 0 {
			out[id] = n
		}
	}
	return out
}

// baseURL returns a worker's base URL, from the cache or the indexer.
func (p *Proxy) baseURL(id uint64) string {
	p.mu.RLock()
	u, ok := p.baseURLs[id]
	p.mu.RUnlock()
	if ok {
		return u
	}
	info, found := p.ix.Worker(id)
	if !found {
		return ""
	}
	p.mu.Lock()
	p.baseURLs[id] = info.Spec.BaseURL
	p.mu.Unlock()
	return info.Spec.BaseURL
}

// markUnhealthy takes a worker out of rotation at once when nothing
// listens at its address (connection refused: the engine is down, not
// slow); the poller puts it back when it answers again.
func (p *Proxy) markUnhealthy(id uint64, why error) {
	if !errors.Is(why, syscall.ECONNREFUSED) {
		return
	}
	if err := p.ix.SetHealthy(id, false); err != nil {
		return // removed meanwhile
	}
	p.log.Warn("kvrouter: engine unreachable, out of rotation until its health check passes",
		"worker_id", id, "error", why.Error())
}

// isTimeout reports an error that is the engine's slowness, not the
// client's going away.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
