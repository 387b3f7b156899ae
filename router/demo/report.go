package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/kvhash/kvhash/router/proxy"
)

// WriteTable writes the results as the demo's table.
func WriteTable(w io.Writer, rs []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\trequests\tfailed\thit rate\tprefill tokens\tTTFT mean\tTTFT p90\troute p50\troute p99\tviolations\tquarantines\tworkers\t")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f%%\t%s\t%s\t%s\t%.0f µs\t%.0f µs\t%d\t%d\t%s\t\n",
			r.Policy, r.Requests, r.Failed, 100*r.HitRate, millions(r.PrefillTokens),
			ms(r.TTFTMeanMs), ms(r.TTFTP90Ms), r.RouteP50Us, r.RouteP99Us, r.Violations, r.Quarantines, r.States)
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "hit rate: cached prompt tokens / prompt tokens (the engines' usage); TTFT: the engines' simulated time to first token")
	for _, r := range rs {
		if note := scheduleNote(r); note != "" {
			fmt.Fprintln(w, note)
		}
	}
}

// scheduleNote says when a run did not go as asked: the host could not
// keep the replay's schedule (and at what speed it ran instead), or
// requests waited for a full fleet (429s retried).
func scheduleNote(r Result) string {
	var parts []string
	if r.LagP90Ms > float64(lagLimit.Milliseconds()) || r.Speed < r.AskedSpeed {
		s := fmt.Sprintf("the host could not keep the schedule: requests went out up to %s late (p90 %s)",
			ms(r.LagMaxMs), ms(r.LagP90Ms))
		if r.Speed < r.AskedSpeed {
			s += fmt.Sprintf("; it ran at %.3gx instead of %.3gx (--speedup fixes it, or lower it)", r.Speed, r.AskedSpeed)
		}
		parts = append(parts, s)
	}
	if len(r.FailedBy) > 0 {
		kinds := slices.Sorted(maps.Keys(r.FailedBy))
		got := make([]string, len(kinds))
		for i, k := range kinds {
			got[i] = fmt.Sprintf("%d %s", r.FailedBy[k], k)
		}
		parts = append(parts, fmt.Sprintf("%d failed (%s)", r.Failed, strings.Join(got, ", ")))
	}
	if r.Retries > 0 {
		parts = append(parts, fmt.Sprintf("%d answers were 429 (every engine at its limit) and retried after Retry-After", r.Retries))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: %s", r.Policy, strings.Join(parts, "; "))
}

func millions(n int64) string { return strconv.FormatFloat(float64(n)/1e6, 'f', 2, 64) + " M" }

func ms(v float64) string {
	if v >= 10000 {
		return strconv.FormatFloat(v/1000, 'f', 1, 64) + " s"
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + " ms"
}

// tokenizeCost measures what a text prompt costs over token ids: the
// proxy's extra /tokenize round trip (its X-Kvrouter-Tokenize-Us header).
func tokenizeCost(ctx context.Context, o Options, hc *http.Client, url string) string {
	var us []float64
	for i := range 20 {
		b, _ := json.Marshal(map[string]any{
			"model": o.Engine.Model, "max_tokens": 1,
			"prompt": fmt.Sprintf("Request %d of the tokenize measurement: a text prompt of a few dozen words, as a chat client would send it.", i),
		})
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions", bytes.NewReader(b))
		if err != nil {
			return ""
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if v, err := strconv.ParseFloat(resp.Header.Get(proxy.HeaderTokenizeUs), 64); err == nil {
			us = append(us, v)
		}
	}
	if len(us) == 0 {
		return ""
	}
	return fmt.Sprintf("text prompts: the /tokenize round trip to an engine costs %.0f µs (p50 of %d; token-id prompts skip it)", quantile(us, 0.5), len(us))
}
