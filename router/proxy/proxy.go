package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/internal/freelist"
	"github.com/kvhash/kvhash/router/internal/netguard"
	"github.com/kvhash/kvhash/router/route"
	"github.com/kvhash/kvhash/router/route/admit"
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
	// MaxNumSeqs: the requests an engine runs at once (its
	// max_num_seqs; EngineSlots adds what it may queue); zero:
	// DefaultMaxNumSeqs. SlotBatch: under policy kvrouter, once an engine
	// runs MaxNumSeqs of the proxy's kvrouter requests, the next ones
	// routed to it wait in the proxy until SlotBatch of its slots are free
	// and go together (router/route/admit's Slots, slotgate.go); zero:
	// they go at once.
	MaxNumSeqs int
	SlotBatch  int
	// QueueLimit: requests that may wait for a slot (all models); zero:
	// DefaultQueueLimit. QueueTimeout: how long one may wait before its
	// 429; zero: DefaultQueueTimeout. See admission.go.
	QueueLimit   int
	QueueTimeout time.Duration
	// HoldTokens: under policy kvrouter, a request waits in the proxy
	// before it is routed while every engine of its model has at least
	// this much prefill queued, and held requests go by highest response
	// ratio (hold.go); zero: never held. The wait counts against
	// QueueLimit and QueueTimeout too.
	HoldTokens int
}

// candidateBufsKept: decisions at once whose candidate lists are kept.
const candidateBufsKept = 64

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
	held  gateSet[string, admit.Gate]     // holding, by model (hold.go)
	gates gateSet[uint64, admit.SlotGate] // full engines' slots, by engine (slotgate.go)

	rrNext atomic.Uint64

	// slots: each engine's requests in flight (backpressure), read and
	// taken without a lock by the routing decision.
	slots *engineSlots
	// reachable is the routing decision's Eligible: made once, so a
	// decision does not allocate a closure (an allocation may make its
	// goroutine assist the garbage collector, and wait).
	reachable func(id uint64) bool
	// candidateBufs: the decisions' candidate lists, reused (the proxy
	// uses only the choice), for the same reason.
	candidateBufs *freelist.List[[]route.Candidate]
	baselineBufs  *freelist.List[*baselineScratch]
	// baseURLs caches each worker's base URL (refreshed by the poller),
	// so the request path never builds a full WorkerInfo; copy-on-write,
	// read without a lock.
	baseURLs atomic.Pointer[map[uint64]string]

	mu       sync.Mutex
	rng      *rand.Rand
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
	if opts.MaxNumSeqs <= 0 {
		opts.MaxNumSeqs = DefaultMaxNumSeqs
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
	p := &Proxy{
		opts: opts, ix: opts.Indexer, rt: opts.Router, log: opts.Logger, client: client, side: side,
		stats:         newStats(time.Now, opts.DefaultPolicy),
		adm:           admission{queues: map[string][]*waiter{}},
		slots:         newEngineSlots(opts.EngineSlots),
		candidateBufs: freelist.New[[]route.Candidate](candidateBufsKept),
		baselineBufs:  freelist.New[*baselineScratch](candidateBufsKept),
		rng:           rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		failures:      map[uint64]int{},
		peers:         newPeers(),
		stop:          make(chan struct{}),
	}
	p.baseURLs.Store(&map[uint64]string{})
	// Only the workers it can forward to (a worker registered without a
	// base_url is a candidate for /v1/route's clients, not for the
	// proxy), and only those with a free slot (admission.go).
	p.reachable = func(id uint64) bool { return p.slots.free(id) && p.baseURL(id) != "" }
	return p, nil
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
func (p *Proxy) Inflight() map[uint64]int { return p.slots.busy() }

// baseURL returns a worker's base URL, from the cache or the indexer.
func (p *Proxy) baseURL(id uint64) string {
	if u, ok := (*p.baseURLs.Load())[id]; ok {
		return u
	}
	info, found := p.ix.Worker(id)
	if !found {
		return ""
	}
	p.mu.Lock()
	m := maps.Clone(*p.baseURLs.Load())
	m[id] = info.Spec.BaseURL
	p.baseURLs.Store(&m)
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
