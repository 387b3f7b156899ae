package sim

import (
	"fmt"
	"io"
	"strings"
)

// WriteMarkdown writes the sweep as one Markdown table for a README: a
// row per policy, a column per load, each cell "TTFT p90 / hit rate /
// goodput" (means over seeds, TTFT p90 with its 95 % interval when there
// are several), under a line with the trace, the fleet and the bounds.
func WriteMarkdown(w io.Writer, res Results) error {
	var loads []float64
	var policies []string
	cells := map[string]map[float64]Cell{}
	for _, c := range res.Summary {
		if _, ok := cells[c.Policy]; !ok {
			policies = append(policies, c.Policy)
			cells[c.Policy] = map[float64]Cell{}
		}
		cells[c.Policy][c.Load] = c
	}
	seen := map[float64]bool{}
	for _, r := range res.Rows {
		if !seen[r.Load] {
			seen[r.Load] = true
			loads = append(loads, r.Load)
		}
	}
	s := res.Setup
	var b strings.Builder
	fmt.Fprintf(&b, "%s; %d engines x %d blocks of %d tokens (profile %s), %d seed(s). Bounds: infinite cache hit %.3f, pooled LRU hit %.3f. Load: the work left after the pooled cache's hits (its missed prompt tokens, plus output tokens at a full decode batch's cost, %.1f prefill tokens each) over the fleet's capacity; load 1.0 is %s the trace's own arrival rate. Cells: TTFT p90 (s%s) / prefix hit rate / goodput (TTFT <= %gs and TPOT <= %gms), means over the seeds.\n\n",
		res.Trace, res.Engines, s.NumBlocks, s.BlockSize, s.Profile, s.Seeds, res.Bounds.InfiniteHitRate, res.Bounds.PooledLRUHitRate, s.DecodeTokenWork, loadOneRate(s), ciNote(s.Seeds), s.SLOTTFTS, s.SLOTPOTS*1000)
	b.WriteString("| policy |")
	for _, l := range loads {
		fmt.Fprintf(&b, " load %.1f |", l)
	}
	b.WriteString("\n|---|")
	for range loads {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, p := range policies {
		fmt.Fprintf(&b, "| %s |", p)
		for _, l := range loads {
			c, ok := cells[p][l]
			if !ok {
				b.WriteString(" |")
				continue
			}
			ttft := seconds(c.Mean["ttft_p90_s"])
			if c.Seeds > 1 && c.CI95["ttft_p90_s"] > 0 { // none: every seed gave the same
				ttft += " ± " + seconds(c.CI95["ttft_p90_s"])
			}
			fmt.Fprintf(&b, " %s / %.2f / %.2f |", ttft, c.Mean["hit_rate"], c.Mean["goodput"])
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func ciNote(seeds int) string {
	if seeds > 1 {
		return ", ± the 95 % interval's half-width over the seeds where they differ"
	}
	return ""
}

// seconds prints a time with three significant digits.
func seconds(s float64) string {
	switch {
	case s >= 10:
		return fmt.Sprintf("%.1f", s)
	case s >= 1:
		return fmt.Sprintf("%.2f", s)
	}
	return fmt.Sprintf("%.3f", s)
}

// loadOneRate says how many times the trace's own arrival rate load 1.0
// is.
func loadOneRate(s Setup) string {
	if !(s.TraceWorkTokS > 0) {
		return "an unknown multiple of"
	}
	return fmt.Sprintf("%.1fx", s.FleetPrefillTokS/s.TraceWorkTokS)
}
