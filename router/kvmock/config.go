package kvmock

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kvhash/kvhash/router/engine"
	"github.com/kvhash/kvhash/router/enginehash"
)

// EventFormat is how each KV event is laid out in the MessagePack batch.
type EventFormat string

// The two event layouts vLLM has shipped.
const (
	// EventFormatMap: each event is a map tagged by "type" (vLLM >= 0.24).
	EventFormatMap EventFormat = "map"
	// EventFormatArray: each event is a positional array whose first element
	// is the tag, trailing default fields omitted (older vLLM).
	EventFormatArray EventFormat = "array"
)

// HashFormat is how an engine block id goes on the wire.
type HashFormat string

// The two hash encodings vLLM uses.
const (
	// HashFormatInt: the digest's last 8 bytes, big-endian, as an unsigned int.
	HashFormatInt HashFormat = "int"
	// HashFormatBytes: the whole 32-byte digest as a MessagePack bin.
	HashFormatBytes HashFormat = "bytes"
)

// ReplayShape is the reply layout of the replay ROUTER endpoint.
type ReplayShape string

// The two replay reply layouts, told apart by frame count.
const (
	// ReplayShape4: ["", topic, seq, payload], end ["", "", 0xFF*8, ""] (vLLM >= 0.26).
	ReplayShape4 ReplayShape = "4-frame"
	// ReplayShape3: ["", seq, payload], end ["", 0xFF*8, ""] (SGLang, older vLLM).
	ReplayShape3 ReplayShape = "3-frame"
)

// Config is everything a kvmock engine can be told. The zero value is not
// usable: start from DefaultConfig.
type Config struct {
	Model string // served model name (/v1/models, responses)
	// LoRAModules are the LoRA adapters served besides the base model: a
	// request naming one runs under it (its blocks carry the adapter's
	// name in their hash and events), with lora_int_id its index + 1.
	LoRAModules []string
	MaxModelLen int // longest prompt + max_tokens accepted
	VocabSize   int // token ids must be below this

	// The KV cache.
	NumBlocks int // physical KV blocks
	BlockSize int // tokens per block
	// Block ids: vLLM's chain under HashAlgo (its --prefix-caching-hash-algo:
	// sha256, sha256_cbor, xxhash, xxhash_cbor) from the root hash(HashSeed)
	// (HashSeed plays PYTHONHASHSEED); Unstable replaces the root by 32
	// random bytes per process start.
	HashAlgo string
	HashSeed string
	Unstable bool
	// StoreDecodeBlocks: blocks filled by generated tokens are cached and
	// published too, as vLLM does.
	StoreDecodeBlocks bool

	// The event stream. An empty EventsEndpoint publishes nothing.
	EventsEndpoint string // tcp://*:5557 binds; tcp://host:port connects
	ReplayEndpoint string // "" = no replay socket
	Topic          string
	EventFormat    EventFormat
	HashFormat     HashFormat
	ReplayShape    ReplayShape
	ReplayBuffer   int           // batches kept for replay (vLLM's buffer_steps)
	StepInterval   time.Duration // one event batch per step, as vLLM's scheduler
	DPRank         uint32        // the data_parallel_rank each batch carries

	// Simulated time: router/engine's vLLM V1 model. Without a Profile, a
	// step takes PrefillTokensPerSec's time for its new prompt tokens plus
	// DecodeTimePerToken when it decodes; a Profile (the Dynamo mocker's
	// polynomials, or a measured engine's) replaces both.
	PrefillTokensPerSec float64 // uncached prompt tokens computed per second
	DecodeTimePerToken  time.Duration
	Profile             *engine.Profile
	MaxRunning          int     // vLLM's max_num_seqs: requests running at once
	MaxNumBatchedTokens int     // vLLM's max_num_batched_tokens: tokens computed per step (chunked prefill)
	Speedup             float64 // wall time = simulated time / Speedup

	DefaultMaxTokens int // when a request gives none (vLLM's completions default: 16)
}

// DefaultConfig is a small engine that behaves like vLLM's defaults where
// they matter to a router: block size 16, map events, int hashes, the
// 4-frame replay shape, sha256_cbor ids.
func DefaultConfig() Config {
	return Config{
		Model:               "kvmock",
		MaxModelLen:         131072,
		VocabSize:           128256,
		NumBlocks:           16384,
		BlockSize:           16,
		HashAlgo:            "sha256_cbor",
		HashSeed:            enginehash.DefaultVLLMSeed,
		StoreDecodeBlocks:   true,
		Topic:               "",
		EventFormat:         EventFormatMap,
		HashFormat:          HashFormatInt,
		ReplayShape:         ReplayShape4,
		ReplayBuffer:        10000,
		StepInterval:        5 * time.Millisecond,
		PrefillTokensPerSec: 10000,
		DecodeTimePerToken:  20 * time.Millisecond,
		MaxRunning:          64,
		MaxNumBatchedTokens: 8192,
		Speedup:             1,
		DefaultMaxTokens:    16,
	}
}

// Validate reports every bad setting at once.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Model == "" {
		bad("model name is empty")
	}
	seen := map[string]bool{c.Model: true}
	for _, name := range c.LoRAModules {
		if name == "" || seen[name] {
			bad("LoRA module %q: names must be non-empty and differ from each other and the model's", name)
		}
		seen[name] = true
	}
	if c.BlockSize <= 0 {
		bad("block size %d: must be positive", c.BlockSize)
	}
	if c.NumBlocks <= 0 {
		bad("num blocks %d: must be positive", c.NumBlocks)
	}
	if c.MaxModelLen <= 0 {
		bad("max model len %d: must be positive", c.MaxModelLen)
	}
	if c.VocabSize <= firstWordID {
		bad("vocab size %d: must exceed %d (the reserved ids)", c.VocabSize, firstWordID)
	}
	if _, err := parseHashAlgo(c.HashAlgo); err != nil {
		errs = append(errs, err)
	}
	switch c.EventFormat {
	case EventFormatMap, EventFormatArray:
	default:
		bad("event format %q: want %q or %q", c.EventFormat, EventFormatMap, EventFormatArray)
	}
	switch c.HashFormat {
	case HashFormatInt, HashFormatBytes:
	default:
		bad("hash format %q: want %q or %q", c.HashFormat, HashFormatInt, HashFormatBytes)
	}
	switch c.ReplayShape {
	case ReplayShape4, ReplayShape3:
	default:
		bad("replay shape %q: want %q or %q", c.ReplayShape, ReplayShape4, ReplayShape3)
	}
	if c.ReplayBuffer <= 0 {
		bad("replay buffer %d: must be positive", c.ReplayBuffer)
	}
	if c.StepInterval <= 0 {
		bad("step interval %v: must be positive", c.StepInterval)
	}
	if c.PrefillTokensPerSec <= 0 {
		bad("prefill rate %v tokens/s: must be positive", c.PrefillTokensPerSec)
	}
	if c.DecodeTimePerToken < 0 {
		bad("decode time per token %v: must not be negative", c.DecodeTimePerToken)
	}
	if c.MaxRunning <= 0 {
		bad("max running %d: must be positive", c.MaxRunning)
	}
	if c.MaxNumBatchedTokens <= 0 {
		bad("max num batched tokens %d: must be positive", c.MaxNumBatchedTokens)
	}
	if c.Profile != nil {
		if err := c.Profile.Validate(); err != nil {
			bad("profile %q: %v", c.Profile.Name, err)
		}
	}
	if !(c.Speedup > 0) {
		bad("speedup %v: must be positive", c.Speedup)
	}
	if c.DefaultMaxTokens <= 0 {
		bad("default max tokens %d: must be positive", c.DefaultMaxTokens)
	}
	if c.ReplayEndpoint != "" && c.EventsEndpoint == "" {
		bad("a replay endpoint needs an events endpoint")
	}
	for _, ep := range []string{c.EventsEndpoint, c.ReplayEndpoint} {
		if ep != "" && !strings.Contains(ep, "://") {
			bad("endpoint %q: want transport://address (tcp://*:5557)", ep)
		}
	}
	return errors.Join(errs...)
}

// engineConfig is the engine model's configuration for c.
func (c *Config) engineConfig() engine.Config {
	return engine.Config{
		NumBlocks:            c.NumBlocks,
		BlockSize:            c.BlockSize,
		MaxNumSeqs:           c.MaxRunning,
		MaxNumBatchedTokens:  c.MaxNumBatchedTokens,
		EnableChunkedPrefill: true,
		Profile:              c.timing(),
	}
}

// timing is c's Profile, or the linear one its rates describe.
func (c *Config) timing() engine.Profile {
	if c.Profile != nil {
		return *c.Profile
	}
	return engine.Profile{
		Name:      "kvmock-rates",
		Source:    "kvmock's --prefill-tokens-per-sec and --decode-ms-per-token",
		PrefillT1: 1000 / c.PrefillTokensPerSec,
		DecodeP0:  float64(c.DecodeTimePerToken) / float64(time.Millisecond),
	}
}
