package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/kvhash/kvhash/router/engine"
	"github.com/kvhash/kvhash/router/kvmock"
)

// options is everything the command line sets.
type options struct {
	cfg       kvmock.Config
	listen    string
	readyFile string
	logLevel  slog.Level
	logFormat string
}

const usageHeader = `kvmock: a simulated vLLM engine for testing KV-aware routers.

It serves vLLM's OpenAI-compatible API (POST /v1/completions,
/v1/chat/completions, /tokenize; GET /health, /v1/models), holds a fixed
number of KV blocks with prefix reuse and LRU eviction, and publishes
vLLM-format KV events over ZeroMQ (with a replay endpoint), block ids being
vLLM's own. Time is simulated: prefill cost per uncached prompt token,
decode cost per output token, a batch capacity, and --speedup.

Usage: kvmock [flags]

Flags:
`

// parseFlags reads the command line into options; help and errors are
// written to out.
func parseFlags(args []string, out io.Writer) (options, error) {
	cfg := kvmock.DefaultConfig()
	cfg.EventsEndpoint = "tcp://*:5557"
	o := options{cfg: cfg}
	fs := flag.NewFlagSet("kvmock", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprint(out, usageHeader)
		fs.PrintDefaults()
	}
	c := &o.cfg

	fs.StringVar(&o.listen, "listen", "127.0.0.1:8000", "HTTP address (\":8000\" for every interface; port 0 picks one, logged at start)")
	fs.StringVar(&o.readyFile, "ready-file", "", "once serving, write the bound addresses here as JSON (http, kv_events, replay, root): for a parent process that started kvmock on port 0")
	fs.StringVar(&c.Model, "model", c.Model, "served model name")
	loraModules := fs.String("lora-modules", "", "LoRA adapters served besides the model, comma-separated names (vLLM's name=path form accepted, the path ignored): a request naming one runs under it")
	fs.IntVar(&c.MaxModelLen, "max-model-len", c.MaxModelLen, "longest prompt + max_tokens accepted")
	fs.IntVar(&c.VocabSize, "vocab-size", c.VocabSize, "token ids must be below this")
	fs.IntVar(&c.DefaultMaxTokens, "default-max-tokens", c.DefaultMaxTokens, "max_tokens when a request gives none")

	fs.IntVar(&c.NumBlocks, "num-blocks", c.NumBlocks, "KV cache size in blocks")
	fs.IntVar(&c.BlockSize, "block-size", c.BlockSize, "tokens per KV block")
	fs.StringVar(&c.HashAlgo, "hash-algo", c.HashAlgo, "vLLM's --prefix-caching-hash-algo: sha256, sha256_cbor, xxhash, xxhash_cbor")
	fs.StringVar(&c.HashSeed, "hash-seed", c.HashSeed, "the seed of the root digest (vLLM: PYTHONHASHSEED's value, else \"vllm-none-hash\")")
	fs.BoolVar(&c.Unstable, "unstable", false, "a random root per process start, as vLLM without PYTHONHASHSEED (xxhash): every restart renames every block")
	fs.BoolVar(&c.StoreDecodeBlocks, "store-decode-blocks", c.StoreDecodeBlocks, "cache and publish blocks filled by generated tokens, as vLLM does")

	fs.StringVar(&c.EventsEndpoint, "kv-events-endpoint", c.EventsEndpoint, "ZeroMQ PUB endpoint: binds with *, :: or ipc://, connects otherwise (as vLLM); \"\" publishes nothing")
	fs.StringVar(&c.ReplayEndpoint, "replay-endpoint", "", "ZeroMQ ROUTER endpoint answering replay requests (\"\" = none)")
	fs.StringVar(&c.Topic, "topic", c.Topic, "topic frame of every event message")
	eventFormat := fs.String("event-format", string(c.EventFormat), "events as \"map\" (vLLM >= 0.24, tagged \"type\") or \"array\" (older vLLM, positional)")
	hashFormat := fs.String("hash-format", string(c.HashFormat), "block hashes as \"int\" (last 8 digest bytes, big-endian) or \"bytes\" (the whole digest)")
	replayShape := fs.String("replay-shape", "4", "replay replies: \"4\" frames [\"\", topic, seq, payload] (vLLM >= 0.26) or \"3\" [\"\", seq, payload] (SGLang, older vLLM)")
	fs.IntVar(&c.ReplayBuffer, "replay-buffer", c.ReplayBuffer, "batches kept for replay (vLLM's buffer_steps)")
	fs.DurationVar(&c.StepInterval, "step", c.StepInterval, "scheduler step: events are published as one batch per step")
	dpRank := fs.Uint("dp-rank", 0, "data_parallel_rank written in every batch (one rank per process; run one kvmock per rank)")
	kvEventsConfig := fs.String("kv-events-config", "", "vLLM's --kv-events-config JSON (endpoint, replay_endpoint, topic, buffer_steps), overriding the flags above")

	fs.Float64Var(&c.PrefillTokensPerSec, "prefill-tokens-per-sec", c.PrefillTokensPerSec, "uncached prompt tokens computed per simulated second: a step's prefill time (without --profile)")
	decodeMs := fs.Float64("decode-ms-per-token", float64(c.DecodeTimePerToken)/float64(time.Millisecond), "simulated milliseconds a decoding step adds (every running request decodes one token per step; without --profile)")
	profile := fs.String("profile", "", "an engine timing profile (JSON, router/engine/profiles: \"dynamo-mocker\" names the built-in one, Dynamo's mocker polynomials) replacing the two rates above")
	fs.IntVar(&c.MaxRunning, "max-running", c.MaxRunning, "vLLM's --max-num-seqs: requests running at once (the rest wait in arrival order)")
	fs.IntVar(&c.MaxNumBatchedTokens, "max-num-batched-tokens", c.MaxNumBatchedTokens, "vLLM's --max-num-batched-tokens: tokens computed per step (longer prompts are prefilled in chunks)")
	fs.Float64Var(&c.Speedup, "speedup", c.Speedup, "simulated time runs this many times faster than the wall clock (reported times stay simulated)")

	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	fs.StringVar(&o.logFormat, "log-format", "text", "text or json")

	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	c.LoRAModules = parseLoRAModules(*loraModules)
	c.EventFormat = kvmock.EventFormat(*eventFormat)
	c.HashFormat = kvmock.HashFormat(*hashFormat)
	switch *replayShape {
	case "4", string(kvmock.ReplayShape4):
		c.ReplayShape = kvmock.ReplayShape4
	case "3", string(kvmock.ReplayShape3):
		c.ReplayShape = kvmock.ReplayShape3
	default:
		return o, fmt.Errorf("--replay-shape %q: want 4 or 3", *replayShape)
	}
	if *dpRank > 1<<31 {
		return o, fmt.Errorf("--dp-rank %d: too large", *dpRank)
	}
	c.DPRank = uint32(*dpRank)
	c.DecodeTimePerToken = time.Duration(*decodeMs * float64(time.Millisecond))
	switch *profile {
	case "":
	case "dynamo-mocker":
		p := engine.DefaultProfile()
		c.Profile = &p
	default:
		p, err := engine.LoadProfile(*profile)
		if err != nil {
			return o, fmt.Errorf("--profile: %w", err)
		}
		c.Profile = &p
	}
	if *kvEventsConfig != "" {
		if err := applyKVEventsConfig(c, *kvEventsConfig); err != nil {
			return o, err
		}
	}
	if err := o.logLevel.UnmarshalText([]byte(*logLevel)); err != nil {
		return o, fmt.Errorf("--log-level %q: %w", *logLevel, err)
	}
	if o.logFormat != "text" && o.logFormat != "json" {
		return o, fmt.Errorf("--log-format %q: want text or json", o.logFormat)
	}
	if err := c.Validate(); err != nil {
		return o, err
	}
	return o, nil
}

// parseLoRAModules reads "a,b" or vLLM's "a=/path/a b=/path/b".
func parseLoRAModules(s string) []string {
	var names []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		name, _, _ := strings.Cut(f, "=")
		names = append(names, name)
	}
	return names
}

// vllmKVEventsConfig is the part of vLLM's KVEventsConfig kvmock honours.
type vllmKVEventsConfig struct {
	EnableKVCacheEvents *bool   `json:"enable_kv_cache_events"`
	Publisher           *string `json:"publisher"`
	Endpoint            *string `json:"endpoint"`
	ReplayEndpoint      *string `json:"replay_endpoint"`
	Topic               *string `json:"topic"`
	BufferSteps         *int    `json:"buffer_steps"`
}

// applyKVEventsConfig lets a user paste the --kv-events-config of the vLLM
// deployment kvmock stands in for.
func applyKVEventsConfig(c *kvmock.Config, text string) error {
	var v vllmKVEventsConfig
	dec := json.NewDecoder(strings.NewReader(text))
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("--kv-events-config: %w", err)
	}
	if v.Publisher != nil && *v.Publisher != "zmq" && *v.Publisher != "null" {
		return fmt.Errorf("--kv-events-config: publisher %q: kvmock publishes over zmq", *v.Publisher)
	}
	if (v.EnableKVCacheEvents != nil && !*v.EnableKVCacheEvents) || (v.Publisher != nil && *v.Publisher == "null") {
		c.EventsEndpoint, c.ReplayEndpoint = "", ""
		return nil
	}
	if v.Endpoint != nil {
		c.EventsEndpoint = *v.Endpoint
	}
	if v.ReplayEndpoint != nil {
		c.ReplayEndpoint = *v.ReplayEndpoint
	}
	if v.Topic != nil {
		c.Topic = *v.Topic
	}
	if v.BufferSteps != nil {
		c.ReplayBuffer = *v.BufferSteps
	}
	return nil
}

// errHelp is flag.ErrHelp, re-exported for main's exit code.
var errHelp = flag.ErrHelp

func isHelp(err error) bool { return errors.Is(err, errHelp) }
