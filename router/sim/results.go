package sim

import (
	"math"
	"slices"
)

// Row is one run's measurements: one (load, policy, seed). Rates are
// fractions, times seconds.
type Row struct {
	Policy    string  `json:"policy"`
	Load      float64 `json:"load"`
	RateScale float64 `json:"rate_scale"`
	Seed      uint64  `json:"seed"`
	Requests  int     `json:"requests"`
	Failed    int     `json:"failed"`

	TTFTMean float64 `json:"ttft_mean_s"`
	TTFTP50  float64 `json:"ttft_p50_s"`
	TTFTP90  float64 `json:"ttft_p90_s"`
	TTFTP99  float64 `json:"ttft_p99_s"`
	TPOTP50  float64 `json:"tpot_p50_s"`
	TPOTP99  float64 `json:"tpot_p99_s"`
	E2EP90   float64 `json:"e2e_p90_s"`

	HitRate float64 `json:"hit_rate"`
	// HitShareOfPooled: HitRate over the pooled-LRU bound's.
	HitShareOfPooled float64 `json:"hit_share_of_pooled"`
	PrefillTokens    int     `json:"prefill_tokens"`
	// Held: requests the router held before routing them (kvrouter's
	// admission queue, router/route/admit).
	Held        int `json:"held"`
	Preemptions int `json:"preemptions"`
	// LoadCV: the coefficient of variation of prefill tokens computed per
	// engine (0: perfectly even).
	LoadCV float64 `json:"load_cv"`
	// Goodput: the share of the trace's requests within the SLO; per
	// second in GoodputRPS.
	Goodput    float64 `json:"goodput"`
	GoodputRPS float64 `json:"goodput_rps"`
	// MakespanS: virtual seconds from the first arrival to the last end.
	MakespanS float64 `json:"makespan_s"`
}

// Results is a whole sweep: results.json.
type Results struct {
	Trace   string `json:"trace"`
	Engines int    `json:"engines"`
	Bounds  Bounds `json:"bounds"`
	Setup   Setup  `json:"setup"`
	Rows    []Row  `json:"rows"`
	Summary []Cell `json:"summary"`
}

// Setup records what the numbers depend on besides the trace.
type Setup struct {
	BlockSize           int     `json:"block_size"`
	NumBlocks           int     `json:"num_blocks"`
	MaxNumSeqs          int     `json:"max_num_seqs"`
	MaxNumBatchedTokens int     `json:"max_num_batched_tokens"`
	Profile             string  `json:"profile"`
	FleetPrefillTokS    float64 `json:"fleet_prefill_tokens_per_s"`
	TraceTokS           float64 `json:"trace_prefill_tokens_per_s"`
	// TraceWorkTokS: the trace's work at its own rate (OfferedWorkRate);
	// a load is this times the rate scale over FleetPrefillTokS.
	TraceWorkTokS float64 `json:"trace_work_tokens_per_s"`
	// DecodeTokenWork: an output token's work in prefill tokens.
	DecodeTokenWork float64  `json:"decode_token_work"`
	ScrapeIntervalS float64  `json:"scrape_interval_s"`
	SLOTTFTS        float64  `json:"slo_ttft_s"`
	SLOTPOTS        float64  `json:"slo_tpot_s"`
	Seeds           int      `json:"seeds"`
	Policies        []string `json:"policies"`
}

// Cell is one (load, policy) over its seeds: each measure's mean and the
// half-width of its 95 % confidence interval (0 with one seed).
type Cell struct {
	Policy string             `json:"policy"`
	Load   float64            `json:"load"`
	Seeds  int                `json:"seeds"`
	Mean   map[string]float64 `json:"mean"`
	CI95   map[string]float64 `json:"ci95"`
}

// measures names the Row fields summarised over seeds, in table order.
var measures = []struct {
	name string
	get  func(Row) float64
}{
	{"ttft_mean_s", func(r Row) float64 { return r.TTFTMean }},
	{"ttft_p50_s", func(r Row) float64 { return r.TTFTP50 }},
	{"ttft_p90_s", func(r Row) float64 { return r.TTFTP90 }},
	{"ttft_p99_s", func(r Row) float64 { return r.TTFTP99 }},
	{"tpot_p50_s", func(r Row) float64 { return r.TPOTP50 }},
	{"tpot_p99_s", func(r Row) float64 { return r.TPOTP99 }},
	{"e2e_p90_s", func(r Row) float64 { return r.E2EP90 }},
	{"hit_rate", func(r Row) float64 { return r.HitRate }},
	{"hit_share_of_pooled", func(r Row) float64 { return r.HitShareOfPooled }},
	{"prefill_tokens", func(r Row) float64 { return float64(r.PrefillTokens) }},
	{"preemptions", func(r Row) float64 { return float64(r.Preemptions) }},
	{"load_cv", func(r Row) float64 { return r.LoadCV }},
	{"goodput", func(r Row) float64 { return r.Goodput }},
	{"failed", func(r Row) float64 { return float64(r.Failed) }},
}

// summarize groups rows by (load, policy), in the rows' order.
func summarize(rows []Row) []Cell {
	var cells []Cell
	idx := map[[2]any]int{}
	groups := [][]Row{}
	for _, r := range rows {
		k := [2]any{r.Load, r.Policy}
		i, ok := idx[k]
		if !ok {
			i = len(groups)
			idx[k] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], r)
	}
	for _, g := range groups {
		c := Cell{Policy: g[0].Policy, Load: g[0].Load, Seeds: len(g), Mean: map[string]float64{}, CI95: map[string]float64{}}
		for _, m := range measures {
			xs := make([]float64, len(g))
			for i, r := range g {
				xs[i] = m.get(r)
			}
			c.Mean[m.name], c.CI95[m.name] = meanCI(xs)
		}
		cells = append(cells, c)
	}
	return cells
}

// meanCI is the mean and the half-width of a 95 % Student-t interval.
func meanCI(xs []float64) (mean, half float64) {
	n := len(xs)
	for _, x := range xs {
		mean += x
	}
	mean /= float64(n)
	if n < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(ss / float64(n-1))
	return mean, tQuantile975(n-1) * sd / math.Sqrt(float64(n))
}

// tQuantile975 is Student's t 0.975 quantile for df degrees of freedom.
func tQuantile975(df int) float64 {
	table := []float64{0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086}
	if df < len(table) {
		return table[df]
	}
	return 1.96
}

// percentile is the q-quantile (0..1) of sorted xs, linearly
// interpolated between ranks; 0 for none.
func percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	pos := q * float64(len(sorted)-1)
	lo := int(pos)
	if lo+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (pos-float64(lo))*(sorted[lo+1]-sorted[lo])
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// coefficientOfVariation is the population standard deviation over the
// mean (0 when the mean is 0).
func coefficientOfVariation(xs []float64) float64 {
	m := mean(xs)
	if m == 0 {
		return 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss/float64(len(xs))) / m
}

// row turns a finished run into its Row.
func (r *runner) row(traceRequests int, bounds Bounds) Row {
	o := &r.out
	slices.Sort(o.ttft)
	slices.Sort(o.tpot)
	slices.Sort(o.e2e)
	row := Row{
		Policy: r.spec.policy, Load: r.spec.load, RateScale: r.spec.rateScale, Seed: r.spec.seed,
		Requests: traceRequests, Failed: traceRequests - len(o.ttft),
		TTFTMean: mean(o.ttft), TTFTP50: percentile(o.ttft, .5), TTFTP90: percentile(o.ttft, .9), TTFTP99: percentile(o.ttft, .99),
		TPOTP50: percentile(o.tpot, .5), TPOTP99: percentile(o.tpot, .99), E2EP90: percentile(o.e2e, .9),
		MakespanS: r.now.Seconds(), Held: o.held,
	}
	if o.promptTokens > 0 {
		row.HitRate = float64(o.cachedTokens) / float64(o.promptTokens)
	}
	if bounds.PooledLRUHitRate > 0 {
		row.HitShareOfPooled = row.HitRate / bounds.PooledLRUHitRate
	}
	per := make([]float64, len(r.engines))
	for i, e := range r.engines {
		per[i] = float64(e.prefillTokens)
		row.PrefillTokens += e.prefillTokens
		row.Preemptions += int(e.e.Stats().Preemptions)
	}
	row.LoadCV = coefficientOfVariation(per)
	row.Goodput = float64(o.good) / float64(traceRequests)
	if row.MakespanS > 0 {
		row.GoodputRPS = float64(o.good) / row.MakespanS
	}
	return row
}
