// Command benchfig reads `go test -bench` output of kvrouter's benchmarks
// (router/tests) on stdin, passes it through, and then prints each figure
// beside its target (make bench-router).
package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
)

// A figure: the benchmark (name prefix), its metric unit, what it is, and
// its target (a bound and whether the figure must be at least or below it).
type figure struct {
	bench, unit, what string
	bound             float64
	atLeast           bool
	targetText        string
}

var figures = []figure{
	{"BenchmarkIngest/map-int", "blocks/s", "ingestion, vLLM map events + int hashes, decode + hash + apply, one core", 1e6, true, ">= 1,000,000 blocks/s"},
	{"BenchmarkIngest/array-bytes", "blocks/s", "ingestion, vLLM array events + bytes hashes, decode + hash + apply, one core", 1e6, true, ">= 1,000,000 blocks/s"},
	{"BenchmarkIngest/map-int", "blocks/cpu-s", "  the same per CPU second (map events, int hashes)", 1e6, true, ">= 1,000,000 blocks/s"},
	{"BenchmarkIngest/array-bytes", "blocks/cpu-s", "  the same per CPU second (array events, bytes hashes)", 1e6, true, ">= 1,000,000 blocks/s"},
	{"BenchmarkRouteHTTP", "routes/s", "routing over HTTP, 128 workers, events streaming at 100k blocks/s", 20000, true, ">= 20,000 routes/s"},
	{"BenchmarkRouteHTTP", "cpu-µs/route", "  CPU per route: server + HTTP client + event stream (µs)", 0, false, ""},
	{"BenchmarkRouteHTTP", "routes/s-at-full-cpu", "  routes/s the machine's cores would serve if kvrouter had them to itself", 20000, true, ">= 20,000 routes/s"},
	{"BenchmarkRouteHTTP", "p50-µs", "  route latency p50 (µs)", 0, false, ""},
	{"BenchmarkRouteHTTP", "p99-µs", "  route latency p99 (µs)", 1000, false, "< 1,000 µs"},
	{"BenchmarkRouteHandler", "cpu-µs/route", "routing, the server's own CPU per route (no network, one goroutine, 128 workers)", 0, false, ""},
	{"BenchmarkMemoryPerBlock", "heap-B/pair", "memory per indexed (worker, block), Go heap (bytes)", 0, false, ""},
	{"BenchmarkMemoryPerBlock", "rss-B/pair", "memory per indexed (worker, block), resident set (bytes)", 0, false, ""},
	{"BenchmarkParseCompletion/12k-tokens", "new/old", "proxy/picker body parse, 12k token ids: one pass / encoding/json (same run)", 0.5, false, "< 0.5"},
	{"BenchmarkParseCompletion/chat-48KiB", "new/old", "proxy/picker body parse, 48 KiB chat: one pass / encoding/json (same run)", 0.5, false, "< 0.5"},
	{"BenchmarkParseQuery/8k-tokens", "new/old", "Dynamo /query body parse, 8192 token ids: one pass / encoding/json (same run)", 0.5, false, "< 0.5"},
	{"BenchmarkParseRoute/8k-tokens", "new/old", "/v1/route body parse, 8192 token ids: one pass / encoding/json (same run)", 0.5, false, "< 0.5"},
	{"BenchmarkParseTokenizeAnswer/12k-tokens", "new/old", "an engine's /tokenize answer, 12k ids: one pass / encoding/json (same run)", 0.5, false, "< 0.5"},
}

var resultLine = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?\s+\d+\s+(.*)$`)

func main() {
	metrics := map[string]map[string]float64{}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		line := in.Text()
		fmt.Println(line)
		m := resultLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		fields := strings.Fields(m[3])
		vals := map[string]float64{}
		for i := 0; i+1 < len(fields); i += 2 {
			if v, err := strconv.ParseFloat(fields[i], 64); err == nil {
				vals[fields[i+1]] = v
			}
		}
		metrics[m[1]] = vals
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "benchfig:", err)
		os.Exit(1)
	}
	fmt.Println("\nkvrouter's figures (this run, this machine; per-CPU figures hold whatever else the machine runs):")
	for _, f := range figures {
		v, ok := metrics[f.bench][f.unit]
		if !ok {
			fmt.Printf("  %-80s  (not measured)\n", f.what)
			continue
		}
		verdict := ""
		if f.targetText != "" {
			met := v >= f.bound
			if !f.atLeast {
				met = v < f.bound
			}
			verdict = "target " + f.targetText
			if met {
				verdict += ": met"
			} else {
				verdict += ": NOT met"
			}
		}
		fmt.Printf("  %-80s %14s  %s\n", f.what, group(v), verdict)
	}
	// Wall-clock figures (routes/s, latency, blocks/s) drop when other
	// work shares the cores; the load says how much did.
	if la, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(la)); len(f) >= 3 {
			fmt.Printf("  load average at the end (1, 5, 15 min): %s on %d cores\n", strings.Join(f[:3], ", "), runtime.NumCPU())
		}
	}
}

// group writes v with thousands separators, one decimal below 100, three
// below 1 (the ratios).
func group(v float64) string {
	if v < 1 {
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
	if v < 100 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	s := strconv.FormatInt(int64(v+0.5), 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
