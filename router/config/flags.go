package config

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Parsed is the outcome of the command line: the effective config and
// what the binary was asked to do besides serving.
type Parsed struct {
	Config      Config
	ConfigFile  string
	PrintConfig bool
}

// Parse builds the effective config from the defaults, the file named by
// --config, then the other flags (flags win over the file). The flags are
// parsed twice: once to find --config, and once more over the loaded file
// so that an explicit flag overrides the key it names. Usage and errors go
// to out. The config is validated even for --print-config, so what it
// prints is a config that starts.
func Parse(name string, args []string, out io.Writer) (Parsed, error) {
	var p Parsed
	first := Default()
	fs := newFlagSet(name, &first, &p, io.Discard)
	if err := fs.Parse(args); err != nil {
		// Parse again with the real output for a readable message.
		fs = newFlagSet(name, &first, &p, out)
		return p, fs.Parse(args)
	}
	if fs.NArg() > 0 {
		return p, fmt.Errorf("unexpected argument %q (every setting is a --flag)", fs.Arg(0))
	}
	cfg := Default()
	if p.ConfigFile != "" {
		var err error
		if cfg, err = LoadFile(p.ConfigFile, cfg); err != nil {
			return p, err
		}
	}
	fileWorkers := cfg.Workers
	cfg.Workers = nil
	fs = newFlagSet(name, &cfg, &p, out)
	if err := fs.Parse(args); err != nil {
		return p, err
	}
	// --worker adds to the file's workers rather than replacing them.
	cfg.Workers = append(fileWorkers, cfg.Workers...)
	if err := cfg.Security.LoadTokens(nil); err != nil {
		return p, err
	}
	if err := cfg.Validate(); err != nil {
		return p, err
	}
	p.Config = cfg
	return p, nil
}

// PrintFlags writes every flag with its default and help to out (a
// command's usage).
func PrintFlags(name string, out io.Writer) {
	c, p := Default(), Parsed{}
	fs := newFlagSet(name, &c, &p, out)
	fs.PrintDefaults()
}

// newFlagSet binds every config field to its flag.
func newFlagSet(name string, c *Config, p *Parsed, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&p.ConfigFile, "config", "", "YAML config file (unknown keys are errors); flags override it")
	fs.BoolVar(&p.PrintConfig, "print-config", false, "print the effective config as YAML and exit")

	fs.StringVar(&c.Listen, "listen", c.Listen, "HTTP listen address")
	fs.IntVar(&c.BlockSize, "block-size", c.BlockSize, "block size in tokens (the engines' --block-size)")
	fs.StringVar(&c.Bind, "bind", c.Bind, "bind this endpoint for engines that connect (tcp://*:5557); workers come from the topic")
	fs.StringVar(&c.BindModel, "bind-model", c.BindModel, "model of workers first seen on --bind whose topic names none")
	fs.IntVar(&c.BindMaxWorkers, "bind-max-workers", c.BindMaxWorkers, "most workers --bind registers from topics (0: only registered workers' topics)")
	fs.Var(listFlag{&c.BindTopics}, "bind-topics", "comma-separated topics that may register a worker on --bind: exact, or a prefix ending in * (empty: any)")
	fs.Int64Var(&c.ZMQMaxMessageBytes, "zmq-max-message-bytes", c.ZMQMaxMessageBytes, "largest ZeroMQ message a peer may send (frames + 64 bytes each); a peer over it is disconnected")
	fs.IntVar(&c.IngestWorkers, "ingest-workers", c.IngestWorkers, "most ingest goroutines at work at once, decoding or reading engines' connections (0: unbounded); below GOMAXPROCS it keeps a P for queries during a burst, at some ingest throughput")
	fs.StringVar(&c.Log.Format, "log-format", c.Log.Format, "log format: text or json")
	fs.StringVar(&c.Log.Level, "log-level", c.Log.Level, "log level: debug, info, warn, error")
	fs.StringVar(&c.Snapshot.Path, "snapshot", c.Snapshot.Path, "snapshot file: loaded at start, written atomically every interval and on shutdown")
	fs.DurationVar(&c.Snapshot.Interval, "snapshot-interval", c.Snapshot.Interval, "time between snapshot writes (0: on shutdown only)")
	fs.BoolVar(&c.Snapshot.DiscardUnreadable, "snapshot-discard-unreadable", c.Snapshot.DiscardUnreadable, "a snapshot that cannot be read is renamed aside and kvrouter starts empty (default: refuse to start)")
	fs.StringVar(&c.Index.StabilityMode, "stability-mode", c.Index.StabilityMode, "engine hash stability: warn or enforce (empty: KVHASH_ENFORCE_ENGINE_HASH_STABILITY)")
	fs.Var(listFlag{&c.Index.Media}, "index-media", "comma-separated media indexed besides GPU (e.g. CPU)")
	fs.DurationVar(&c.Index.DegradedSettle, "degraded-settle", c.Index.DegradedSettle, "least time a rank stays degraded after a lost gap (0: indexer default)")
	fs.Var(listFlag{&c.Index.EngineHashSeeds}, "engine-hash-seeds", "comma-separated seeds (engines' PYTHONHASHSEED) that engine block id verification tries besides vLLM's default and 0")
	fs.BoolVar(&c.Index.VerifyChainedHashes, "verify-chained-hashes", c.Index.VerifyChainedHashes, "also verify chained engine block ids (keeps each block's 32-byte digest)")
	fs.IntVar(&c.Index.MaxRankBlocks, "max-rank-blocks", c.Index.MaxRankBlocks, "most blocks one worker rank may hold; stores beyond are refused (0: 4194304)")
	fs.DurationVar(&c.Index.QuarantineSettle, "quarantine-settle", c.Index.QuarantineSettle, "clean time a quarantined rank needs to be live again (0: indexer default)")
	fs.Float64Var(&c.Routing.OverlapScoreCredit, "overlap-score-credit", c.Routing.OverlapScoreCredit, "credit per cached block, 0..1")
	fs.Float64Var(&c.Routing.PrefillLoadScale, "prefill-load-scale", c.Routing.PrefillLoadScale, "weight of prefill load")
	fs.Float64Var(&c.Routing.Temperature, "router-temperature", c.Routing.Temperature, "0: lowest cost; > 0: softmax sampling")
	fs.DurationVar(&c.Routing.RequestTTL, "request-ttl", c.Routing.RequestTTL, "a routed request never freed expires after this")
	fs.StringVar(&c.Routing.Policy, "policy", c.Routing.Policy, "the proxy's default routing policy (kvrouter: predicted TTFT; dynamo: Dynamo's cost, also for /v1/route; llmd, llmd-precise, sglang, round_robin, random, least_loaded); a request's X-Kvrouter-Policy header wins")
	fs.Int64Var(&c.Limits.MaxBodyBytes, "max-body-bytes", c.Limits.MaxBodyBytes, "largest HTTP request body (413 above)")
	fs.IntVar(&c.Limits.MaxTokens, "max-tokens", c.Limits.MaxTokens, "most token ids in one request (413 above)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "graceful drain limit")
	fs.StringVar(&c.NATS.URL, "nats", c.NATS.URL, "event plane for router replicas: embedded (in-process NATS with JetStream) or nats://host:4222; empty: this router alone")
	fs.StringVar(&c.NATS.Store, "nats-store", c.NATS.Store, "the embedded NATS server's JetStream directory (empty: a temporary one)")
	fs.StringVar(&c.NATS.ReplicaID, "replica-id", c.NATS.ReplicaID, "this replica's name on the event plane (empty: hostname-pid)")
	fs.DurationVar(&c.NATS.StreamMaxAge, "nats-stream-max-age", c.NATS.StreamMaxAge, "event stream retention by age (0: 24h)")
	fs.Int64Var(&c.NATS.StreamMaxBytes, "nats-stream-max-bytes", c.NATS.StreamMaxBytes, "event stream retention by size (0: 1 GiB)")
	fs.DurationVar(&c.NATS.SnapshotInterval, "nats-snapshot-interval", c.NATS.SnapshotInterval, "index snapshots to the object store every (0: 1m; well below the max age)")
	fs.DurationVar(&c.NATS.LeaseTTL, "nats-lease-ttl", c.NATS.LeaseTTL, "an engine's ingest lease expires after this without renewal (0: 5s)")
	fs.DurationVar(&c.NATS.ReplicaTimeout, "nats-replica-timeout", c.NATS.ReplicaTimeout, "a replica silent this long has its requests expired (0: 5s)")
	fs.IntVar(&c.NATS.StreamReplicas, "nats-stream-replicas", c.NATS.StreamReplicas, "JetStream replication of the stream and buckets in a NATS cluster (0: 1)")
	bindSecurityFlags(fs, c)
	fs.StringVar(&c.EPP.Listen, "epp-listen", c.EPP.Listen, "serve the gateway endpoint picker (Envoy ext_proc, gRPC) here, e.g. 127.0.0.1:9002; empty: none")
	fs.BoolVar(&c.EPP.TLS, "epp-tls", c.EPP.TLS, "serve the endpoint picker over TLS with a self-signed certificate (ALPN h2)")
	fs.IntVar(&c.EPP.MaxInFlightPerWorker, "epp-max-in-flight", c.EPP.MaxInFlightPerWorker, "picker: 429 when every eligible worker has this many requests in flight through it (0: share the proxy's per-engine slots instead)")
	fs.IntVar(&c.EPP.Fallbacks, "epp-fallbacks", c.EPP.Fallbacks, "picker: endpoints after the pick in x-gateway-destination-endpoint, next cheapest first")
	proxyFlags(fs, &c.Proxy)
	fs.Var(listFlag{&c.NATS.Models}, "nats-models", "comma-separated models this replica applies and ingests, one partition of the fleet (empty: every model)")
	fs.Var(workerFlag{&c.Workers}, "worker", "register a worker: id=1,model=M,endpoint=tcp://h:5557[,replay_endpoint=...][,dp_size=N][,topic=T][,tenant=T][,base_url=U][,engine_hash=H] (repeatable)")
	return fs
}

// listFlag is a comma-separated list.
type listFlag struct{ dst *[]string }

func (f listFlag) String() string {
	if f.dst == nil {
		return ""
	}
	return strings.Join(*f.dst, ",")
}

func (f listFlag) Set(s string) error {
	*f.dst = nil
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*f.dst = append(*f.dst, part)
		}
	}
	return nil
}

// workerFlag appends one worker per use.
type workerFlag struct{ dst *[]Worker }

func (f workerFlag) String() string { return "" }

func (f workerFlag) Set(s string) error {
	w, err := ParseWorker(s)
	if err != nil {
		return err
	}
	*f.dst = append(*f.dst, w)
	return nil
}

// ParseWorker reads "id=1,model=M,endpoint=tcp://h:5557,...".
func ParseWorker(s string) (Worker, error) {
	var w Worker
	haveID := false
	for part := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return w, fmt.Errorf("worker %q: %q is not key=value", s, part)
		}
		var err error
		switch k {
		case "id", "worker_id":
			w.WorkerID, err = strconv.ParseUint(v, 10, 64)
			haveID = true
		case "model":
			w.Model = v
		case "tenant":
			w.Tenant = v
		case "endpoint":
			w.Endpoint = v
		case "replay_endpoint", "replay":
			w.ReplayEndpoint = v
		case "dp_size":
			w.DPSize, err = strconv.Atoi(v)
		case "topic":
			w.Topic = v
		case "base_url":
			w.BaseURL = v
		case "engine_hash":
			w.EngineHash = v
		default:
			return w, fmt.Errorf("worker %q: unknown key %q", s, k)
		}
		if err != nil {
			return w, fmt.Errorf("worker %q: %s: %w", s, k, err)
		}
	}
	if !haveID {
		return w, fmt.Errorf("worker %q: no id", s)
	}
	return w, w.Validate()
}
