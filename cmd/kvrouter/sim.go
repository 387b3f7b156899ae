package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	mooncaketrace "github.com/kvhash/kvhash/data/mooncake"
	"github.com/kvhash/kvhash/internal/mooncake"
	"github.com/kvhash/kvhash/router/engine"
	"github.com/kvhash/kvhash/router/route/policy"
	"github.com/kvhash/kvhash/router/sim"
)

// runSim is `kvrouter sim`: routing policies compared on a virtual clock
// (router/sim; docs/guides/routing-benchmark.md).
func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("kvrouter sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `kvrouter sim: replays a Mooncake-format trace against simulated vLLM engines
on a virtual clock, once per (load, policy, seed), through the production
indexer and router, and prints the table. See docs/guides/routing-benchmark.md.

Usage: kvrouter sim [flags]

Flags:
`)
		fs.PrintDefaults()
	}
	def := sim.DefaultConfig()
	trace := fs.String("trace", "", `Mooncake-format trace (JSONL); "" : the vendored Mooncake synthetic trace; "generated": a generated two-family trace; "generated-chat": its shared-system-prompt multi-turn family alone; "generated-tenants": its many-tenants-with-long-prefixes family alone`)
	genRequests := fs.Int("generated-requests", 4000, "requests of a generated trace")
	engines := fs.Int("engines", def.Engines, "engines in the fleet")
	loads := fs.String("load", "0.3,0.5,0.8,1.0,1.2", "offered loads: the work left after the pooled cache bound's hits (missed prompt tokens + output tokens at a decode batch's cost) per second over the fleet's capacity; 1.0 saturates even an ideal router (timestamps scaled, whole trace)")
	rateScale := fs.String("rate-scale", "", "arrival-rate multipliers instead of --load (1 = the trace's own timestamps)")
	policies := fs.String("policies", strings.Join(policy.Names(), ","), "policies, in table order")
	seeds := fs.Int("seeds", 1, "runs per (load, policy), seeded 1..K (confidence intervals over them)")
	profile := fs.String("profile", "", "engine timing profile (JSON, router/engine/profiles); default Dynamo's mocker")
	numBlocks := fs.Int("num-blocks", def.Engine.NumBlocks, "KV blocks per engine")
	blockSize := fs.Int("block-size", def.Engine.BlockSize, "tokens per KV block (engines and the router's index)")
	maxSeqs := fs.Int("max-num-seqs", def.Engine.MaxNumSeqs, "requests an engine runs at once")
	maxBatched := fs.Int("max-num-batched-tokens", def.Engine.MaxNumBatchedTokens, "tokens an engine computes per step")
	noChunked := fs.Bool("no-chunked-prefill", false, "a prompt must fit one step's budget whole")
	noAdmission := fs.Bool("no-admission", false, "kvrouter routes and sends every request when it arrives (no admission queue at the router while the fleet is saturated, no batching of a full engine's admissions)")
	scrape := fs.Duration("scrape-interval", def.ScrapeInterval, "how often engines' /metrics are scraped (policies that read them)")
	sloTTFT := fs.Duration("slo-ttft", def.SLO.TTFT, "goodput: TTFT at most this")
	sloTPOT := fs.Duration("slo-tpot", def.SLO.TPOT, "goodput: time per output token at most this")
	credit := fs.Float64("dynamo-overlap-score-credit", def.Dynamo.OverlapScoreCredit, "the dynamo policy's overlap_score_credit")
	scale := fs.Float64("dynamo-prefill-load-scale", def.Dynamo.PrefillLoadScale, "the dynamo policy's prefill_load_scale")
	temp := fs.Float64("dynamo-temperature", def.Dynamo.Temperature, "the dynamo policy's router_temperature")
	parallel := fs.Int("parallel", 0, "runs at once (0: GOMAXPROCS)")
	out := fs.String("out", "", "write results.json, results.txt and the SVG plots to this directory")
	quiet := fs.Bool("q", false, "no progress on stderr")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile (pprof) of the sweep to this file")
	memProfile := fs.String("memprofile", "", "write a heap profile (pprof, allocations included) at the end of the sweep to this file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "kvrouter sim: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	cfg := def
	cfg.Engines, cfg.Seeds, cfg.Parallel, cfg.ScrapeInterval = *engines, *seeds, *parallel, *scrape
	cfg.NoAdmission = *noAdmission
	cfg.SLO = sim.SLO{TTFT: *sloTTFT, TPOT: *sloTPOT}
	cfg.Dynamo.OverlapScoreCredit, cfg.Dynamo.PrefillLoadScale, cfg.Dynamo.Temperature = *credit, *scale, *temp
	cfg.Engine.NumBlocks, cfg.Engine.BlockSize, cfg.Engine.MaxNumSeqs = *numBlocks, *blockSize, *maxSeqs
	cfg.Engine.MaxNumBatchedTokens, cfg.Engine.EnableChunkedPrefill = *maxBatched, !*noChunked
	cfg.Policies = splitList(*policies)
	var err error
	if *rateScale != "" {
		cfg.Loads = nil
		if cfg.RateScales, err = parseFloats(*rateScale); err != nil {
			fmt.Fprintf(stderr, "kvrouter sim: --rate-scale: %v\n", err)
			return 2
		}
	} else if cfg.Loads, err = parseFloats(*loads); err != nil {
		fmt.Fprintf(stderr, "kvrouter sim: --load: %v\n", err)
		return 2
	}
	if *profile != "" {
		if cfg.Engine.Profile, err = engine.LoadProfile(*profile); err != nil {
			fmt.Fprintf(stderr, "kvrouter sim: %v\n", err)
			return 2
		}
	}
	if cfg.Trace, err = simTrace(*trace, *genRequests); err != nil {
		fmt.Fprintf(stderr, "kvrouter sim: %v\n", err)
		return 2
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "kvrouter sim: %v\n", err)
		return 2
	}
	if !*quiet {
		fmt.Fprintf(stderr, "kvrouter sim: %s: %d requests, %d engines, %d runs\n", cfg.Trace.Name, len(cfg.Trace.Requests), cfg.Engines,
			len(cfg.Policies)*cfg.Seeds*(len(cfg.Loads)+len(cfg.RateScales)))
		cfg.Progress = func(done, total int, r sim.Row, elapsed time.Duration) {
			fmt.Fprintf(stderr, "[%d/%d %5.1fs] load %.2f %-13s seed %d: TTFT p90 %.3fs, hit %.3f\n",
				done, total, elapsed.Seconds(), r.Load, r.Policy, r.Seed, r.TTFTP90, r.HitRate)
		}
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "kvrouter sim: %v\n", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "kvrouter sim: %v\n", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	if *memProfile != "" {
		runtime.MemProfileRate = 64 << 10
	}
	res, err := sim.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "kvrouter sim: %v\n", err)
		return 1
	}
	if *memProfile != "" {
		if err := writeHeapProfile(*memProfile); err != nil {
			fmt.Fprintf(stderr, "kvrouter sim: %v\n", err)
			return 1
		}
	}
	if err := sim.WriteTable(stdout, res); err != nil {
		fmt.Fprintf(stderr, "kvrouter sim: %v\n", err)
		return 1
	}
	if *out != "" {
		files, err := sim.WriteDir(*out, res)
		if err != nil {
			fmt.Fprintf(stderr, "kvrouter sim: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "\nwrote %s\n", strings.Join(files, ", "))
	}
	return 0
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// simTrace reads the trace a --trace value names.
func simTrace(path string, generated int) (sim.Trace, error) {
	switch path {
	case "":
		reqs, err := mooncaketrace.Requests()
		return sim.Trace{Name: mooncaketrace.Name, Requests: reqs}, err
	case "generated", "generated-" + mooncake.FamilyChat, "generated-" + mooncake.FamilyTenants:
		opts := mooncake.DefaultGenerateOptions()
		opts.Requests = generated
		opts.Family = strings.TrimPrefix(strings.TrimPrefix(path, "generated"), "-")
		family := "two families"
		if opts.Family != "" {
			family = opts.Family + " family"
		}
		return sim.Trace{Name: fmt.Sprintf("generated, %s (internal/mooncake.Generate, seed 1, %d requests)", family, generated), Requests: mooncake.Generate(1, opts)}, nil
	}
	reqs, err := mooncake.ReadFile[float64](path)
	return sim.Trace{Name: path, Requests: reqs}, err
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func parseFloats(s string) ([]float64, error) {
	var out []float64
	for _, f := range splitList(s) {
		x, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}
