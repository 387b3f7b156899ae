package indexerbench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Cell is one case of the matrix (engines, stored blocks, rate) and its
// runs of each side, in run order.
type Cell struct {
	Engines, Blocks int
	Rate            float64 // 0: burst
	KVRouter        []Result
	Dynamo          []Result
}

// Name names the cell: "4 eng, 2M, burst" and the like.
func (c Cell) Name() string {
	return fmt.Sprintf("%d eng, %s, %s", c.Engines, millions(float64(c.Blocks)), RateName(c.Rate))
}

// RateName is "burst" or the paced rate, "500k/s", "1.2M/s".
func RateName(rate float64) string {
	if rate == 0 {
		return "burst"
	}
	return millions(rate) + "/s"
}

func millions(v float64) string {
	if v >= 999.5e3 { // 999.6k would print as 1000k
		if v < 1e6 {
			v = 1e6
		}
		return strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.1f", v/1e6), "0"), ".") + "M"
	}
	return fmt.Sprintf("%.0fk", v/1e3)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func med(rs []Result, f func(Result) float64) float64 {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = f(r)
	}
	return median(xs)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func wrongOf(rs []Result) (wrong, total int) {
	for _, r := range rs {
		wrong += r.Wrong
	}
	return wrong, len(rs)
}

// WriteTable writes the cells as a Markdown table: each side's median
// over its runs, kvrouter first, and the ratio kvrouter / Dynamo of the
// medians.
func WriteTable(w io.Writer, cells []Cell, queriesPerRun int) error {
	var b strings.Builder
	b.WriteString("| case | blocks/s kvrouter / Dynamo (ratio) | CPU µs/block (ratio) | peak RSS MiB (ratio) | query p50 ms | query p99 ms (ratio) | query max ms | floor max ms | queries/s | wrong answers |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range cells {
		k, d := c.KVRouter, c.Dynamo
		bps := func(r Result) float64 { return r.BlocksPerSec }
		cpu := func(r Result) float64 { return float64(r.CPUPerBlock) / float64(time.Microsecond) }
		rss := func(r Result) float64 { return float64(r.PeakRSS) / (1 << 20) }
		p50 := func(r Result) float64 { return ms(r.Query.P50) }
		p99 := func(r Result) float64 { return ms(r.Query.P99) }
		mx := func(r Result) float64 { return ms(r.Query.Max) }
		fl := func(r Result) float64 { return ms(r.Floor.Max) }
		qps := func(r Result) float64 { return r.Query.Rate }
		wk, nk := wrongOf(k)
		wd, nd := wrongOf(d)
		fmt.Fprintf(&b, "| %s | %s / %s (%.2fx) | %.3f / %.3f (%.2fx) | %.0f / %.0f (%.2fx) | %.2f / %.2f | %.2f / %.2f (%.2fx) | %.1f / %.1f | %.1f / %.1f | %.0f / %.0f | %d / %d of %d |\n",
			c.Name(),
			millions(med(k, bps)), millions(med(d, bps)), ratio(med(k, bps), med(d, bps)),
			med(k, cpu), med(d, cpu), ratio(med(k, cpu), med(d, cpu)),
			med(k, rss), med(d, rss), ratio(med(k, rss), med(d, rss)),
			med(k, p50), med(d, p50),
			med(k, p99), med(d, p99), ratio(med(k, p99), med(d, p99)),
			med(k, mx), med(d, mx),
			med(k, fl), med(d, fl),
			med(k, qps), med(d, qps),
			wk, wd, queriesPerRun*max(nk, nd))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// Targets are issue 30's done-when checks over the cells, one line each.
func Targets(cells []Cell) []string {
	var out []string
	check := func(name string, ok bool, detail string) {
		verdict := "met"
		if !ok {
			verdict = "NOT met"
		}
		out = append(out, fmt.Sprintf("%s: %s (%s)", name, verdict, detail))
	}
	minIngest, maxCPU, maxRSS := 1e18, 0.0, 0.0
	p99ok, burstMax, burstFloor := true, 0.0, 0.0
	var p99s, rsss []string
	for _, c := range cells {
		k, d := c.KVRouter, c.Dynamo
		// A paced stream's blocks/s is its pace on both sides: ingest
		// throughput is a burst's.
		// So is CPU per block: in a paced run it is mostly the queries
		// answered meanwhile, and an index that blocks them answers fewer.
		if c.Rate == 0 {
			maxCPU = max(maxCPU, ratio(med(k, func(r Result) float64 { return float64(r.CPUPerBlock) }), med(d, func(r Result) float64 { return float64(r.CPUPerBlock) })))
			ing := ratio(med(k, func(r Result) float64 { return r.BlocksPerSec }), med(d, func(r Result) float64 { return r.BlocksPerSec }))
			minIngest = min(minIngest, ing)
		}
		rr := ratio(med(k, func(r Result) float64 { return float64(r.PeakRSS) }), med(d, func(r Result) float64 { return float64(r.PeakRSS) }))
		maxRSS = max(maxRSS, rr)
		if rr > 1 {
			rsss = append(rsss, c.Name())
		}
		if c.Rate > 0 {
			kp, dp := med(k, func(r Result) float64 { return ms(r.Query.P99) }), med(d, func(r Result) float64 { return ms(r.Query.P99) })
			if kp > dp {
				p99ok = false
				p99s = append(p99s, fmt.Sprintf("%s %.2f > %.2f ms", c.Name(), kp, dp))
			}
		} else {
			burstMax = max(burstMax, med(k, func(r Result) float64 { return ms(r.Query.Max) }))
			burstFloor = max(burstFloor, med(k, func(r Result) float64 { return ms(r.Floor.Max) }))
		}
	}
	if minIngest < 1e18 {
		check("ingest >= 1.7x Dynamo's (bursts)", minIngest >= 1.7, fmt.Sprintf("lowest ratio %.2fx", minIngest))
		check("CPU per block <= 0.5x (bursts)", maxCPU <= 0.5, fmt.Sprintf("highest ratio %.2fx", maxCPU))
	}
	detail := "lower or equal in every paced case"
	if !p99ok {
		detail = "higher in " + strings.Join(p99s, "; ")
	}
	check("query p99 <= Dynamo's at every paced rate", p99ok, detail)
	if minIngest < 1e18 {
		detail := fmt.Sprintf("median of the runs' max, worst case %.1f ms", burstMax)
		if burstFloor > 0 {
			detail += fmt.Sprintf("; the floor server's in the same runs %.1f ms", burstFloor)
		}
		check("longest query under a burst < 5 ms", burstMax < 5, detail)
	}
	detail = fmt.Sprintf("highest ratio %.2fx", maxRSS)
	if len(rsss) > 0 {
		detail += "; higher in " + strings.Join(rsss, "; ")
	}
	check("peak RSS <= Dynamo's everywhere", maxRSS <= 1, detail)
	return out
}
