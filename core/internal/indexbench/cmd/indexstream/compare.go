package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kvhash/kvhash/core/internal/indexbench"
)

// dynamoTrees are the Dynamo indexes bench/dynamo replays through: its
// RadixTree and its compressed concurrent tree.
var dynamoTrees = []string{"radix", "crtc"}

// compare replays every stream in a directory through kvhash and Dynamo's
// trees, alternating them run by run (so load from other jobs falls on
// both alike), each replay in a fresh process, and prints the medians and
// the kvhash/Dynamo ratios.
func compare(args []string) error {
	fl := flag.NewFlagSet("compare", flag.ExitOnError)
	dir := fl.String("streams", "build/indexstreams", "directory of .kvs streams (indexstream gen)")
	dynamo := fl.String("dynamo", "build/cargo/release/kvhash-dynamo-bench", "bench/dynamo's release binary")
	runs := fl.Int("runs", 7, "replays of each stream by each side")
	only := fl.String("only", "", "comma-separated stream names to run (default all)")
	fl.Parse(args)
	files, err := filepath.Glob(filepath.Join(*dir, "*.kvs"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no .kvs streams in %s: run indexstream gen first", *dir)
	}
	if *only != "" {
		keep := strings.Split(*only, ",")
		files = slices.DeleteFunc(files, func(f string) bool {
			return !slices.Contains(keep, strings.TrimSuffix(filepath.Base(f), ".kvs"))
		})
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var rows []row
	for _, f := range files {
		all := map[string][]indexbench.Figures{}
		for i := range *runs {
			// kvhash and RadixTree are always next to each other; the
			// order turns every other run, so neither side is always
			// the one that goes first after a slow stretch.
			order := append([]string{"kvhash"}, dynamoTrees...)
			if i%2 == 1 {
				slices.Reverse(order)
			}
			for _, impl := range order {
				bin, args := self, []string{"replay", f}
				if impl != "kvhash" {
					bin, args = *dynamo, []string{"replay", "--tree", impl, f}
				}
				fig, err := runFigures(bin, args...)
				if err != nil {
					return err
				}
				all[impl] = append(all[impl], fig)
			}
		}
		r := row{stream: strings.TrimSuffix(filepath.Base(f), ".kvs"), runs: all, med: map[string]indexbench.Figures{}}
		for impl, figs := range all {
			r.med[impl] = indexbench.MedianFigures(figs)
		}
		// Memory is measured once per Dynamo tree, in a run of its own (the
		// counting allocator is off in the timed runs).
		for _, tree := range dynamoTrees {
			fig, err := runFigures(*dynamo, "replay", "--tree", tree, "--mem", f)
			if err != nil {
				return err
			}
			m := r.med[tree]
			m.BytesPerPair = fig.BytesPerPair
			r.med[tree] = m
		}
		printDetail(r)
		rows = append(rows, r)
	}
	printRatios(rows, *runs)
	return nil
}

type row struct {
	stream string
	runs   map[string][]indexbench.Figures // each implementation's runs, in the order they were made
	med    map[string]indexbench.Figures
}

func runFigures(bin string, args ...string) (indexbench.Figures, error) {
	cmd := exec.Command(bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return indexbench.Figures{}, fmt.Errorf("%s %s: %w\n%s", bin, strings.Join(args, " "), err, errb.String())
	}
	var f indexbench.Figures
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &f); err != nil {
		return f, fmt.Errorf("%s %s: output %q: %w", bin, strings.Join(args, " "), out.String(), err)
	}
	return f, nil
}

func printDetail(r row) {
	fmt.Printf("%s (medians)\n", r.stream)
	fmt.Printf("  %-7s %12s %12s %9s %9s %9s %9s %8s %9s  %s\n",
		"impl", "block-ops/s", "apply-blk/s", "p50-64", "p99-64", "route-p50", "route-p99", "B/pair", "pairs", "digest")
	for _, impl := range append([]string{"kvhash"}, dynamoTrees...) {
		f := r.med[impl]
		fmt.Printf("  %-7s %11.2fM %11.2fM %9s %9s %9s %9s %8.1f %9d  %s\n", impl,
			f.BlockOpsPerS/1e6, f.ApplyBlocksPerS/1e6, ns(f.ProbeP50Ns), ns(f.ProbeP99Ns),
			ns(f.RouteP50Ns), ns(f.RouteP99Ns), f.BytesPerPair, f.Pairs, f.Digest)
	}
	for _, tree := range dynamoTrees {
		r.printPairs("block-ops/s", tree, blockOps)
	}
	r.printPairs("p50-64", r.lower(probeP50), probeP50)
	r.printPairs("route-p99", r.lower(routeP99), routeP99)
}

// printPairs prints kvhash's figure over tree's, run by run: the ratios
// whose median printRatios reports.
func (r row) printPairs(figure, tree string, get func(indexbench.Figures) float64) {
	fmt.Printf("  %s kvhash/%s, run by run:", figure, tree)
	for _, v := range indexbench.PairedRatios(r.runs["kvhash"], r.runs[tree], get) {
		fmt.Printf(" %.2f", v)
	}
	fmt.Println()
}

func ns(v int64) string {
	if v >= 10_000 {
		return fmt.Sprintf("%.1fus", float64(v)/1e3)
	}
	return fmt.Sprintf("%dns", v)
}

// printRatios prints the comparison as a Markdown table: throughput
// against Dynamo's faster tree on that stream (higher is better for
// kvhash), latencies against Dynamo's lower one (below 1 is better for
// kvhash). Each ratio is the median of the ratios of adjacent runs
// (indexbench.MedianRatio), not a ratio of the medians above it.
func printRatios(rows []row, runs int) {
	fmt.Printf("\nkvhash / Dynamo 1.6.1 (medians of the ratios of %d pairs of adjacent runs; throughput vs Dynamo's faster tree, latency vs its lower one)\n\n", runs)
	fmt.Println("| stream | block-ops/s, x Dynamo | 64-block match p50, kvhash/Dynamo | routing-query p99, kvhash/Dynamo | B/pair kvhash / radix / crtc | digests |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, r := range rows {
		k, a, b := r.med["kvhash"], r.med["radix"], r.med["crtc"]
		fast, fastName := "radix", "RadixTree"
		if b.BlockOpsPerS > a.BlockOpsPerS {
			fast, fastName = "crtc", "CRTC"
		}
		agree := "agree"
		if k.Digest != a.Digest || k.Digest != b.Digest || k.Digest == "varies" {
			agree = fmt.Sprintf("DIFFER (%s / %s / %s)", k.Digest, a.Digest, b.Digest)
		}
		fmt.Printf("| %s | %.2fx (vs %s) | %.2f | %.2f | %.0f / %.0f / %.0f | %s |\n", r.stream,
			r.ratio(fast, blockOps), fastName,
			r.ratio(r.lower(probeP50), probeP50), r.ratio(r.lower(routeP99), routeP99),
			k.BytesPerPair, a.BytesPerPair, b.BytesPerPair, agree)
	}
}

func blockOps(f indexbench.Figures) float64 { return f.BlockOpsPerS }
func probeP50(f indexbench.Figures) float64 { return float64(f.ProbeP50Ns) }
func routeP99(f indexbench.Figures) float64 { return float64(f.RouteP99Ns) }

// lower is the Dynamo tree whose median of a latency is lower.
func (r row) lower(get func(indexbench.Figures) float64) string {
	if get(r.med["crtc"]) < get(r.med["radix"]) {
		return "crtc"
	}
	return "radix"
}

// ratio is kvhash's figure over tree's, the median over adjacent runs.
func (r row) ratio(tree string, get func(indexbench.Figures) float64) float64 {
	return indexbench.MedianRatio(r.runs["kvhash"], r.runs[tree], get)
}
