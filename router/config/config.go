// Package config is kvrouter's configuration: one YAML file (strict: an
// unknown key is an error, so a typo never silently keeps a default) whose
// every field is also a command-line flag, flags winning over the file.
package config

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kvhash/kvhash/router/internal/netguard"
	"github.com/kvhash/kvhash/router/route/policy"
)

// Config is the effective configuration of one kvrouter process. The
// yaml names are the file's keys; the flag of a key is the same name with
// dashes (block_size -> --block-size).
type Config struct {
	// Listen is the HTTP address (host:port).
	Listen string `yaml:"listen"`
	// BlockSize is the router's block size in tokens; every engine must
	// run the same one (stores of another size are counted, not indexed).
	BlockSize int `yaml:"block_size"`

	// Bind is an optional endpoint the router binds (tcp://*:5557) for
	// engines that connect to it; the worker comes from each topic.
	Bind string `yaml:"bind"`
	// BindModel is the model of workers first seen on the bound endpoint
	// whose topic names none.
	BindModel string `yaml:"bind_model"`
	// BindMaxWorkers bounds the workers registered from the bound
	// endpoint's topics (those first seen there, not registered before);
	// 0: none, only topics of registered workers are accepted.
	BindMaxWorkers int `yaml:"bind_max_workers"`
	// BindTopics, when set, lists the topics that may register a worker
	// on the bound endpoint: exact, or a prefix ending in "*" ("kv@*").
	BindTopics []string `yaml:"bind_topics,omitempty"`
	// ZMQMaxMessageBytes caps one ZeroMQ message from any peer (engines,
	// anyone reaching bind); a peer over it is disconnected and counted.
	ZMQMaxMessageBytes int64 `yaml:"zmq_max_message_bytes"`
	// IngestWorkers, when above 0, bounds how many of the ingest's
	// goroutines work at once: engines' batches decoded and applied, and
	// engine connections' readers (ingest.Options.Workers; 0: unbounded).
	// Below GOMAXPROCS, it keeps a P for queries during a burst.
	IngestWorkers int `yaml:"ingest_workers,omitempty"`

	Log      Log      `yaml:"log"`
	Snapshot Snapshot `yaml:"snapshot"`
	Index    Index    `yaml:"index"`
	Routing  Routing  `yaml:"routing"`
	Limits   Limits   `yaml:"limits"`
	// Proxy: the OpenAI proxy's backpressure (proxy.go).
	Proxy Proxy `yaml:"proxy"`
	// NATS: router replicas sharing one event plane (nats.go).
	NATS NATS `yaml:"nats"`
	// Security: tokens, TLS, allowed engine networks (security.go).
	Security Security `yaml:"security"`
	// EPP: the gateway endpoint picker (epp.go).
	EPP EPP `yaml:"epp"`

	// ShutdownTimeout bounds the graceful drain of HTTP requests.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`

	// Workers are registered at start, as POST /v1/workers would.
	Workers []Worker `yaml:"workers"`
}

// Log configures log/slog.
type Log struct {
	Format string `yaml:"format"` // "text" or "json"
	Level  string `yaml:"level"`  // "debug", "info", "warn", "error"
}

// Snapshot configures the on-disk copy of the index.
type Snapshot struct {
	// Path: "" keeps no snapshot.
	Path string `yaml:"path"`
	// Interval between periodic writes; 0 writes on shutdown only.
	Interval time.Duration `yaml:"interval"`
	// DiscardUnreadable: a snapshot that cannot be read (corrupt, foreign)
	// is renamed aside and kvrouter starts empty; false refuses to start.
	DiscardUnreadable bool `yaml:"discard_unreadable,omitempty"`
}

// Index configures the indexer.
type Index struct {
	// StabilityMode: "" (the environment decides:
	// KVHASH_ENFORCE_ENGINE_HASH_STABILITY), "warn" or "enforce".
	StabilityMode string `yaml:"stability_mode"`
	// Media indexed besides GPU (e.g. ["CPU"]).
	Media []string `yaml:"media"`
	// DegradedSettle and QuarantineSettle: see the indexer's rank states.
	DegradedSettle   time.Duration `yaml:"degraded_settle"`
	QuarantineSettle time.Duration `yaml:"quarantine_settle"`
	// EngineHashSeeds: seeds (engines' PYTHONHASHSEED values) that the
	// verification of engine block ids tries besides vLLM's fixed default
	// and "0" (workers with engine_hash auto or a seedless vLLM scheme).
	EngineHashSeeds []string `yaml:"engine_hash_seeds,omitempty"`
	// VerifyChainedHashes also verifies chained blocks from their
	// parent's full digest, kept per held block (about 48 bytes each).
	VerifyChainedHashes bool `yaml:"verify_chained_hashes"`
	// MaxRankBlocks bounds the blocks one worker rank may hold; stores
	// beyond it are refused and counted. 0: the indexer's default (4Mi,
	// above any one GPU's cache; raise it for indexed offload tiers).
	MaxRankBlocks int `yaml:"max_rank_blocks"`
}

// Routing is how the router scores workers: by predicted time to first
// token (kvrouter's default; docs/guides/routing.md), or, with Policy
// dynamo, by Dynamo's cost with its knobs below (each overridable per
// request).
type Routing struct {
	OverlapScoreCredit float64 `yaml:"overlap_score_credit"`
	PrefillLoadScale   float64 `yaml:"prefill_load_scale"`
	Temperature        float64 `yaml:"temperature"`
	// RequestTTL: a routed request never freed stops counting after it.
	RequestTTL time.Duration `yaml:"request_ttl"`
	// Policy: the proxy's policy when a request's X-Kvrouter-Policy
	// header names none ("": kvrouter; any router/route/policy name).
	// dynamo also makes /v1/route (and the proxy's kvrouter) score by
	// Dynamo's cost instead of the predicted TTFT.
	Policy string `yaml:"policy,omitempty"`
}

// Limits bound what one HTTP request may ask.
type Limits struct {
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	MaxTokens    int   `yaml:"max_tokens"`
	// Slow clients: headers and body must arrive within these; an idle
	// keep-alive connection closes after IdleTimeout.
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`
	ReadBodyTimeout   time.Duration `yaml:"read_body_timeout"`
	IdleTimeout       time.Duration `yaml:"idle_timeout"`
}

// Worker is a worker registered from the file (the fields of POST
// /v1/workers).
type Worker struct {
	WorkerID       uint64 `yaml:"worker_id"`
	Model          string `yaml:"model"`
	Tenant         string `yaml:"tenant,omitempty"`
	Endpoint       string `yaml:"endpoint,omitempty"`
	ReplayEndpoint string `yaml:"replay_endpoint,omitempty"`
	DPSize         int    `yaml:"dp_size,omitempty"`
	Topic          string `yaml:"topic,omitempty"`
	BaseURL        string `yaml:"base_url,omitempty"`
	// EngineHash: the engine's block-hash scheme its ids are verified
	// against ("auto" when empty, "off", "SCHEME" or "SCHEME:SEED").
	EngineHash string `yaml:"engine_hash,omitempty"`
}

// Defaults.
const (
	DefaultListen           = "127.0.0.1:8090" // Dynamo's standalone indexer's port
	DefaultMaxBodyBytes     = 8 << 20          // a million tokens as JSON text fits
	DefaultMaxTokens        = 1 << 20
	DefaultSnapshotInterval = 5 * time.Minute
	DefaultShutdownTimeout  = 10 * time.Second
	DefaultRequestTTL       = 120 * time.Second // Dynamo's
	// DefaultBindMaxWorkers: workers a bound endpoint may register from
	// topics; well above one router's fleet, far below a flood of topics.
	DefaultBindMaxWorkers = 256
)

// Defaults of the slow-client timeouts (limits).
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadBodyTimeout   = 30 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	// DefaultZMQMaxMessageBytes and MinZMQMaxMessageBytes are
	// ingest.DefaultMaxMessageBytes (a few times the largest real batch:
	// see there) and zmqcap.MinLimit (cmd/kvrouter's tests hold them equal).
	DefaultZMQMaxMessageBytes = 64 << 20
	MinZMQMaxMessageBytes     = 4096
)

// Default returns the configuration before the file and the flags. The
// block size has no default: it must match the engines, so it is asked.
func Default() Config {
	return Config{
		Listen:          DefaultListen,
		BindMaxWorkers:  DefaultBindMaxWorkers,
		Log:             Log{Format: "text", Level: "info"},
		Snapshot:        Snapshot{Interval: DefaultSnapshotInterval},
		Routing:         Routing{OverlapScoreCredit: 1, PrefillLoadScale: 1, RequestTTL: DefaultRequestTTL},
		Limits:          defaultLimits(),
		Security:        Security{MetricsAuth: AccessOpen, DashboardAuth: AccessOpen},
		ShutdownTimeout: DefaultShutdownTimeout,

		ZMQMaxMessageBytes: DefaultZMQMaxMessageBytes,
		Proxy:              defaultProxy(),
	}
}

// MaxBlockSize bounds block_size: engines' blocks are tens to a few
// thousand tokens; a larger value is a typo, not a block.
const MaxBlockSize = 1 << 16

// Validate reports every bad setting at once, each naming its key.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Listen == "" {
		bad("listen: empty; want host:port")
	}
	if c.BlockSize <= 0 {
		bad("block_size: %d; set it (--block-size) to the engines' block size", c.BlockSize)
	} else if c.BlockSize > MaxBlockSize {
		bad("block_size: %d; want at most %d tokens a block", c.BlockSize, MaxBlockSize)
	}
	if c.Bind != "" && !strings.Contains(c.Bind, "://") {
		bad("bind: %q; want transport://address (tcp://*:5557)", c.Bind)
	}
	if c.IngestWorkers < 0 {
		bad("ingest_workers: %d; want 0 (unbounded) or more", c.IngestWorkers)
	}
	if c.ZMQMaxMessageBytes < MinZMQMaxMessageBytes || c.ZMQMaxMessageBytes > 1<<62 {
		bad("zmq_max_message_bytes: %d; want %d..2^62", c.ZMQMaxMessageBytes, MinZMQMaxMessageBytes)
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		bad("log.format: %q; want text or json", c.Log.Format)
	}
	switch strings.ToLower(c.Log.Level) {
	case "debug", "info", "warn", "error":
	default:
		bad("log.level: %q; want debug, info, warn or error", c.Log.Level)
	}
	if c.Snapshot.Interval < 0 {
		bad("snapshot.interval: %v is negative", c.Snapshot.Interval)
	}
	switch c.Index.StabilityMode {
	case "", "warn", "enforce":
	default:
		bad("index.stability_mode: %q; want warn or enforce (empty: from KVHASH_ENFORCE_ENGINE_HASH_STABILITY)", c.Index.StabilityMode)
	}
	if c.Index.DegradedSettle < 0 || c.Index.QuarantineSettle < 0 {
		bad("index: settle durations must not be negative")
	}
	if c.Index.MaxRankBlocks < 0 {
		bad("index.max_rank_blocks: %d is negative (0: the default)", c.Index.MaxRankBlocks)
	}
	if c.BindMaxWorkers < 0 {
		bad("bind_max_workers: %d is negative (0: only registered workers' topics)", c.BindMaxWorkers)
	}
	if r := c.Routing.OverlapScoreCredit; !(r >= 0 && r <= 1) {
		bad("routing.overlap_score_credit: %v; want 0..1", r)
	}
	if r := c.Routing.PrefillLoadScale; !(r >= 0) {
		bad("routing.prefill_load_scale: %v; want >= 0", r)
	}
	if r := c.Routing.Temperature; !(r >= 0) {
		bad("routing.temperature: %v; want >= 0", r)
	}
	if c.Routing.RequestTTL <= 0 {
		bad("routing.request_ttl: %v; want > 0", c.Routing.RequestTTL)
	}
	if p := c.Routing.Policy; p != "" && p != "kv" && !policy.Known(p) {
		bad("routing.policy: %q; want one of %s", p, strings.Join(policy.Names(), ", "))
	}
	if c.Limits.MaxBodyBytes <= 0 {
		bad("limits.max_body_bytes: %d; want > 0", c.Limits.MaxBodyBytes)
	}
	if c.Limits.MaxTokens <= 0 {
		bad("limits.max_tokens: %d; want > 0", c.Limits.MaxTokens)
	}
	if c.ShutdownTimeout <= 0 {
		bad("shutdown_timeout: %v; want > 0", c.ShutdownTimeout)
	}
	errs = append(errs, c.validateNATS()...)
	errs = append(errs, c.validateSecurity()...)
	errs = append(errs, c.validateEPP()...)
	errs = append(errs, c.validateProxy()...)
	seen := map[uint64]bool{}
	for i, w := range c.Workers {
		if err := w.Validate(); err != nil {
			bad("workers[%d]: %w", i, err)
		}
		if seen[w.WorkerID] {
			bad("workers[%d]: worker_id %d listed twice", i, w.WorkerID)
		}
		seen[w.WorkerID] = true
	}
	return errors.Join(errs...)
}

// Validate checks one worker entry.
func (w *Worker) Validate() error {
	var errs []error
	if w.Model == "" {
		errs = append(errs, errors.New("model: empty"))
	}
	if w.DPSize < 0 {
		errs = append(errs, fmt.Errorf("dp_size: %d is negative", w.DPSize))
	}
	for _, ep := range []struct{ key, v string }{{"endpoint", w.Endpoint}, {"replay_endpoint", w.ReplayEndpoint}} {
		if ep.v != "" && !strings.Contains(ep.v, "://") {
			errs = append(errs, fmt.Errorf("%s: %q; want transport://host:port", ep.key, ep.v))
		}
	}
	if w.ReplayEndpoint != "" && w.Endpoint == "" {
		errs = append(errs, errors.New("replay_endpoint without endpoint"))
	}
	if w.BaseURL != "" {
		if _, _, err := netguard.ParseBaseURL(w.BaseURL); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
