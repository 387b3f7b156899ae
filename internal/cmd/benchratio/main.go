// Command benchratio reads `go test -bench` output on stdin, passes it
// through, and then prints, for every benchmark named
// <group>/<variant>, each variant's throughput relative to the baseline
// variant of the same group, measured in the same run.
//
//	go test -bench . ./core | go run ./internal/cmd/benchratio -baseline floor
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// A result line: name, iterations, ns/op, then other metrics.
var resultLine = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?\s+\d+\s+([0-9.]+) ns/op`)

type result struct {
	group, variant string
	nsPerOp        float64
}

func main() {
	baseline := flag.String("baseline", "floor", "variant the others are compared with")
	flag.Parse()

	var results []result
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		line := in.Text()
		fmt.Println(line)
		m := resultLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		cut := strings.LastIndexByte(m[1], '/')
		ns, err := strconv.ParseFloat(m[3], 64)
		if cut < 0 || err != nil {
			continue
		}
		results = append(results, result{m[1][:cut], m[1][cut+1:], ns})
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "benchratio:", err)
		os.Exit(1)
	}

	base := map[string]float64{}
	for _, r := range results {
		if r.variant == *baseline {
			base[r.group] = r.nsPerOp
		}
	}
	fmt.Printf("\nthroughput relative to %q (same run; higher is faster):\n", *baseline)
	for _, r := range results {
		if b, ok := base[r.group]; ok && r.variant != *baseline {
			fmt.Printf("  %-50s %-16s %6.2fx\n", r.group, r.variant, b/r.nsPerOp)
		}
	}
}
