package sim

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable writes the sweep as text: the setup and bounds, then one
// block per load with a line per policy (means over seeds, "± half-width
// of the 95 % interval" when there are several).
func WriteTable(w io.Writer, res Results) error {
	s := res.Setup
	fmt.Fprintf(w, "trace: %s\n", res.Trace)
	fmt.Fprintf(w, "fleet: %d engines x %d blocks of %d tokens, max %d seqs, %d tokens/step, profile %s; capacity %.0f tok/s; trace at 1x offers %.0f prompt tok/s, %.0f tok/s of work past the pooled cache (an output token = %.1f prefill tokens; load = work x rate / capacity)\n",
		res.Engines, s.NumBlocks, s.BlockSize, s.MaxNumSeqs, s.MaxNumBatchedTokens, s.Profile, s.FleetPrefillTokS, s.TraceTokS, s.TraceWorkTokS, s.DecodeTokenWork)
	fmt.Fprintf(w, "bounds: infinite cache hit %.3f, pooled LRU (%d blocks) hit %.3f; SLO TTFT <= %gs, TPOT <= %gms; %d seed(s)\n\n",
		res.Bounds.InfiniteHitRate, res.Bounds.PooledLRUCapacity, res.Bounds.PooledLRUHitRate, s.SLOTTFTS, s.SLOTPOTS*1000, s.Seeds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "load\trate\tpolicy\tTTFT mean\tp50\tp90\tp99\tTPOT p50\tp99\tE2E p90\thit\t/pooled\tprefill Mtok\tpreempt\tload CV\tgoodput\tfailed\t")
	rate := map[float64]float64{}
	for _, r := range res.Rows {
		rate[r.Load] = r.RateScale
	}
	last := -1.0
	for _, c := range res.Summary {
		if c.Load != last && last >= 0 {
			fmt.Fprintln(tw, "\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t")
		}
		last = c.Load
		v := func(name, format string, scale float64) string {
			out := fmt.Sprintf(format, c.Mean[name]*scale)
			if c.Seeds > 1 {
				out += fmt.Sprintf("±"+format, c.CI95[name]*scale)
			}
			return out
		}
		cols := []string{
			fmt.Sprintf("%.2f", c.Load), fmt.Sprintf("%.2fx", rate[c.Load]), c.Policy,
			v("ttft_mean_s", "%.3f", 1), v("ttft_p50_s", "%.3f", 1), v("ttft_p90_s", "%.3f", 1), v("ttft_p99_s", "%.3f", 1),
			v("tpot_p50_s", "%.1f", 1000) + "ms", v("tpot_p99_s", "%.1f", 1000) + "ms", v("e2e_p90_s", "%.2f", 1),
			v("hit_rate", "%.3f", 1), v("hit_share_of_pooled", "%.2f", 1), v("prefill_tokens", "%.1f", 1e-6),
			v("preemptions", "%.0f", 1), v("load_cv", "%.2f", 1), v("goodput", "%.3f", 1), v("failed", "%.0f", 1),
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t")+"\t")
	}
	return tw.Flush()
}
