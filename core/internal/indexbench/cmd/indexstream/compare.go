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
	runs := fl.Int("runs", 3, "replays of each stream by each side")
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
		for range *runs {
			fig, err := runFigures(self, "replay", f)
			if err != nil {
				return err
			}
			all["kvhash"] = append(all["kvhash"], fig)
			for _, tree := range dynamoTrees {
				fig, err := runFigures(*dynamo, "replay", "--tree", tree, f)
				if err != nil {
					return err
				}
				all[tree] = append(all[tree], fig)
			}
		}
		r := row{stream: strings.TrimSuffix(filepath.Base(f), ".kvs"), med: map[string]indexbench.Figures{}}
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
// kvhash).
func printRatios(rows []row, runs int) {
	fmt.Printf("\nkvhash / Dynamo 1.6.1 (medians of %d alternating runs; throughput vs Dynamo's faster tree, latency vs its lower one)\n\n", runs)
	fmt.Println("| stream | block-ops/s, x Dynamo | 64-block match p50, kvhash/Dynamo | routing-query p99, kvhash/Dynamo | B/pair kvhash / radix / crtc | digests |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, r := range rows {
		k, a, b := r.med["kvhash"], r.med["radix"], r.med["crtc"]
		fast, fastName := a, "RadixTree"
		if b.BlockOpsPerS > a.BlockOpsPerS {
			fast, fastName = b, "CRTC"
		}
		agree := "agree"
		if k.Digest != a.Digest || k.Digest != b.Digest || k.Digest == "varies" {
			agree = fmt.Sprintf("DIFFER (%s / %s / %s)", k.Digest, a.Digest, b.Digest)
		}
		fmt.Printf("| %s | %.2fx (vs %s) | %.2f | %.2f | %.0f / %.0f / %.0f | %s |\n", r.stream,
			k.BlockOpsPerS/fast.BlockOpsPerS, fastName,
			float64(k.ProbeP50Ns)/float64(min(a.ProbeP50Ns, b.ProbeP50Ns)),
			float64(k.RouteP99Ns)/float64(min(a.RouteP99Ns, b.RouteP99Ns)),
			k.BytesPerPair, a.BytesPerPair, b.BytesPerPair, agree)
	}
}
