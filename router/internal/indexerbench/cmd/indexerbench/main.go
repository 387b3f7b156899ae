// Command indexerbench runs kvrouter and Dynamo's standalone indexer
// alternately on the same generated vLLM ZeroMQ streams and prints a
// Markdown table of medians and ratios (make bench-indexer).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	ib "github.com/kvhash/kvhash/router/internal/indexerbench"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "query-client" {
		// The harness's query client, in a process of its own (RunConfig.QueryClient).
		if err := ib.ServeQueryClient(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "indexerbench:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) == 2 && os.Args[1] == "floor-server" {
		// The floor: an HTTP server that does no work (ib.FloorHandler).
		if err := ib.ServeFloor(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "indexerbench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "indexerbench:", err)
		os.Exit(1)
	}
}

func run() error {
	kvrouter := flag.String("kvrouter", "build/bin/kvrouter", "kvrouter binary")
	python := flag.String("python", "build/venv/bin/python", "the venv's python, with ai-dynamo-runtime")
	against := flag.String("against", "", "a second kvrouter binary to run in Dynamo's place (A/B of two builds; the table's Dynamo column is then that build)")
	dynThreads := flag.Int("dynamo-threads", 0, "Dynamo indexer --threads (0: its default, 4)")
	engines := flag.String("engines", "4,32", "engine counts")
	blocks := flag.String("blocks", "2M,8M", "stored blocks per stream (k and M suffixes)")
	rates := flag.String("rates", "burst,500k,1.2M", "publishing rates, stored blocks/s over all engines (burst: as fast as it goes)")
	runs := flag.Int("runs", 3, "runs of each side per case (alternating which goes first)")
	qps := flag.Float64("qps", 200, "/query calls per second during the stream")
	queries := flag.Int("queries", 200, "prepared queries (sent round-robin, each verified after the stream)")
	out := flag.String("out", "", "also write the table to this file")
	logDir := flag.String("logs", os.TempDir(), "directory for the indexers' logs")
	inProcess := flag.Bool("queries-in-process", false, "send the queries from the harness's own process (a goroutine beside the publishers, whose burst delays the client's reads) instead of a query process")
	floor := flag.Bool("floor", true, "also ask an HTTP server that does no work (a process of its own) at the query rate during each stream: the machine's floor under a query's latency")
	idleFloor := flag.Duration("idle-floor", 10*time.Second, "with -floor, also ask the floor server alone for this long before the first run and after the last, nothing else running (0: not)")
	flag.Parse()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var queryClient []string
	if !*inProcess {
		queryClient = []string{self, "query-client"}
	}
	floorURL := ""
	if *floor {
		fp, err := ib.StartFloor([]string{self, "floor-server"})
		if err != nil {
			return err
		}
		defer func() { _ = fp.Stop() }()
		floorURL = fp.URL
	}

	engineCounts, err := ints(*engines)
	if err != nil {
		return fmt.Errorf("-engines: %w", err)
	}
	sizes, err := ints(*blocks)
	if err != nil {
		return fmt.Errorf("-blocks: %w", err)
	}
	var rateList []float64
	for _, r := range strings.Split(*rates, ",") {
		if r == "burst" {
			rateList = append(rateList, 0)
			continue
		}
		v, err := count(r)
		if err != nil {
			return fmt.Errorf("-rates: %w", err)
		}
		rateList = append(rateList, float64(v))
	}
	sides := []ib.Command{ib.KVRouterCommand(*kvrouter, 16), ib.DynamoCommand(*python, *dynThreads)}
	if *against != "" {
		sides[1] = ib.KVRouterCommand(*against, 16)
		sides[1].Name = "kvrouter-B"
	}

	ctx := context.Background()
	var cells []ib.Cell
	var idle []ib.QueryStats
	measureIdle := func(qs []ib.Query) error {
		if floorURL == "" || *idleFloor <= 0 {
			return nil
		}
		st, err := ib.IdleFloor(ctx, floorURL, queryClient, qs, *qps, *idleFloor)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "idle floor: p50 %.2f p99 %.2f max %.1f ms %.0f/s\n", ms(st.P50), ms(st.P99), ms(st.Max), st.Rate)
		idle = append(idle, st)
		return nil
	}
	var lastQueries []ib.Query
	started := time.Now()
	for _, size := range sizes {
		for _, n := range engineCounts {
			t0 := time.Now()
			st, err := ib.Generate(ib.DefaultSpec(n, size))
			if err != nil {
				return err
			}
			qs := st.Queries(*queries)
			fmt.Fprintf(os.Stderr, "stream: %d engines, %d prompts, %d blocks stored, %d removed, %d MiB encoded (%.1f s)\n",
				n, len(st.Prompts), st.Stored, st.Removed, st.Bytes>>20, time.Since(t0).Seconds())
			if lastQueries == nil {
				if err := measureIdle(qs); err != nil {
					return err
				}
			}
			lastQueries = qs
			for _, rate := range rateList {
				cell := ib.Cell{Engines: n, Blocks: size, Rate: rate}
				for r := range *runs {
					order := []int{0, 1}
					if r%2 == 1 {
						order = []int{1, 0}
					}
					for _, side := range order {
						res, err := runOnce(ctx, sides[side], st, qs, rate, *qps, *logDir, queryClient, floorURL)
						if err != nil {
							return fmt.Errorf("%s: %w", cell.Name(), err)
						}
						fmt.Fprintf(os.Stderr, "  %s run %d %-8s %s blocks/s  cpu %.3f µs/block  rss %d MiB  query p50 %.2f p99 %.2f max %.1f ms %.0f/s  floor max %.1f ms  wrong %d %s  slowest%s\n",
							cell.Name(), r+1, res.Target, strconv.FormatFloat(res.BlocksPerSec, 'f', 0, 64),
							float64(res.CPUPerBlock)/float64(time.Microsecond), res.PeakRSS>>20,
							ms(res.Query.P50), ms(res.Query.P99), ms(res.Query.Max), res.Query.Rate, ms(res.Floor.Max),
							res.Wrong, res.FirstWrong, slowest(res.Query.Slowest))
						if side == 0 {
							cell.KVRouter = append(cell.KVRouter, res)
						} else {
							cell.Dynamo = append(cell.Dynamo, res)
						}
					}
				}
				cells = append(cells, cell)
			}
		}
	}
	if lastQueries != nil {
		if err := measureIdle(lastQueries); err != nil {
			return err
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Medians of %d runs a side (alternating), %.0f queries/s during the stream; ratios kvrouter / Dynamo of the medians (%s in all).\n\n",
		*runs, *qps, time.Since(started).Round(time.Second))
	if err := ib.WriteTable(&b, cells, *queries); err != nil {
		return err
	}
	b.WriteString("\n")
	for _, line := range ib.Targets(cells) {
		b.WriteString("- " + line + "\n")
	}
	if len(idle) > 0 {
		b.WriteString("- " + ib.IdleFloorLine(idle, *idleFloor) + "\n")
	}
	fmt.Print(b.String())
	if *out != "" {
		return os.WriteFile(*out, []byte(b.String()), 0o644)
	}
	return nil
}

func runOnce(ctx context.Context, side ib.Command, st *ib.Stream, qs []ib.Query, rate, qps float64, logDir string, queryClient []string, floorURL string) (res ib.Result, err error) {
	pubs, err := ib.OpenPublishers(st.Spec.Engines)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, pubs.Close()) }()
	t, err := ib.Start(ctx, side, filepath.Join(logDir, "indexerbench-"+side.Name+".log"))
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, t.Stop()) }()
	// A stream that takes more than 4x its paced time, or 2 minutes in a
	// burst, is stuck.
	timeout := 2 * time.Minute
	if rate > 0 {
		timeout = max(timeout, time.Duration(4*float64(st.Stored)/rate*float64(time.Second)))
	}
	return ib.Run(ctx, t, pubs, st, ib.RunConfig{Rate: rate, QueryRate: qps, Queries: qs,
		PollInterval: 10 * time.Millisecond, Timeout: timeout, QueryClient: queryClient, FloorURL: floorURL})
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// slowest lists the slowest queries as " 35ms@2.01s ...": latency at the
// time into the stream it was sent.
func slowest(qs []ib.SlowQuery) string {
	var b strings.Builder
	for _, q := range qs {
		fmt.Fprintf(&b, " %.0fms@%.2fs", ms(q.Took), q.At.Seconds())
	}
	return b.String()
}

func ints(list string) ([]int, error) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		v, err := count(s)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// count parses 500, 500k, 1.2M.
func count(s string) (int, error) {
	s = strings.TrimSpace(s)
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "M"):
		mult, s = 1e6, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "k"):
		mult, s = 1e3, strings.TrimSuffix(s, "k")
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("%q: want a positive count like 500k or 1.2M", s)
	}
	return int(v * mult), nil
}
