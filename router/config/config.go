// Package config is kvrouter's configuration: one YAML file (strict: an
// unknown key is an error, so a typo never silently keeps a default) whose
// every field is also a command-line flag, flags winning over the file.
package config

import (
	"errors"
	"fmt"
	"strings"
	"time"
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

	Log      Log      `yaml:"log"`
	Snapshot Snapshot `yaml:"snapshot"`
	Index    Index    `yaml:"index"`
	Routing  Routing  `yaml:"routing"`
	Limits   Limits   `yaml:"limits"`
	// Proxy: the OpenAI proxy's backpressure (proxy.go).
	Proxy Proxy `yaml:"proxy"`
	// NATS: router replicas sharing one event plane (nats.go).
	NATS NATS `yaml:"nats"`

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
}

// Routing is Dynamo's cost function's knobs (each overridable per request).
type Routing struct {
	OverlapScoreCredit float64 `yaml:"overlap_score_credit"`
	PrefillLoadScale   float64 `yaml:"prefill_load_scale"`
	Temperature        float64 `yaml:"temperature"`
	// RequestTTL: a routed request never freed stops counting after it.
	RequestTTL time.Duration `yaml:"request_ttl"`
}

// Limits bound what one HTTP request may ask.
type Limits struct {
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	MaxTokens    int   `yaml:"max_tokens"`
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
)

// Default returns the configuration before the file and the flags. The
// block size has no default: it must match the engines, so it is asked.
func Default() Config {
	return Config{
		Listen:          DefaultListen,
		Log:             Log{Format: "text", Level: "info"},
		Snapshot:        Snapshot{Interval: DefaultSnapshotInterval},
		Routing:         Routing{OverlapScoreCredit: 1, PrefillLoadScale: 1, RequestTTL: DefaultRequestTTL},
		Limits:          Limits{MaxBodyBytes: DefaultMaxBodyBytes, MaxTokens: DefaultMaxTokens},
		ShutdownTimeout: DefaultShutdownTimeout,
		Proxy:           defaultProxy(),
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
	return errors.Join(errs...)
}
