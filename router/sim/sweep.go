package sim

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Run runs every (load, policy, seed) of cfg, Parallel at a time, and
// returns their rows in (load, policy, seed) order, summarised over seeds,
// with the trace's bounds. Each run holds only its fleet and its requests
// in flight (plus one latency sample per request), so memory grows with
// the fleet and the parallelism, not with policies times loads. ctx stops
// the sweep between runs.
func Run(ctx context.Context, cfg Config) (Results, error) {
	start := time.Now()
	if err := cfg.Validate(); err != nil {
		return Results{}, err
	}
	reqs := cfg.Trace.Requests
	capacity := FleetPrefillCapacity(cfg.Engine, cfg.Engines)
	bounds, err := ComputeBounds(cfg.Trace, cfg.Engine.BlockSize, cfg.Engines*cfg.Engine.NumBlocks)
	if err != nil {
		return Results{}, err
	}
	// A load needs the trace's rate; rate scales do not (a one-request
	// trace replays at --rate-scale, its load reported as 0).
	offered, err := OfferedWorkRate(reqs, bounds, cfg.Engine)
	if err != nil && len(cfg.Loads) > 0 {
		return Results{}, err
	}
	prompt, _ := OfferedPrefillRate(reqs)
	order := arrivalOrder(reqs)

	type job struct {
		spec    runSpec
		stretch float64
	}
	var jobs []job
	add := func(load, scale, stretch float64) {
		for _, p := range cfg.Policies {
			for s := range cfg.Seeds {
				jobs = append(jobs, job{spec: runSpec{policy: p, load: load, rateScale: scale, seed: uint64(s + 1)}, stretch: stretch})
			}
		}
	}
	for _, l := range cfg.Loads {
		stretch := offered / (l * capacity)
		add(l, 1/stretch, stretch)
	}
	for _, x := range cfg.RateScales {
		add(offered*x/capacity, x, 1/x)
	}

	rows := make([]Row, len(jobs))
	errs := make([]error, len(jobs))
	var mu sync.Mutex
	done := 0
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(cfg.parallel(), len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				j := jobs[i]
				r, err := newRunner(&cfg, j.spec, order, arrivals(reqs, j.stretch))
				if err == nil {
					err = r.run(reqs)
				}
				if err != nil {
					errs[i] = fmt.Errorf("%s at load %.2f seed %d: %w", j.spec.policy, j.spec.load, j.spec.seed, err)
					continue
				}
				rows[i] = r.row(len(reqs), bounds)
				mu.Lock()
				done++
				if cfg.Progress != nil {
					cfg.Progress(done, len(jobs), rows[i], time.Since(start))
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for i := range jobs {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Results{}, err
	}
	for _, err := range errs {
		if err != nil {
			return Results{}, err
		}
	}
	return Results{
		Trace: cfg.Trace.Name, Engines: cfg.Engines, Bounds: bounds,
		Setup: Setup{
			BlockSize: cfg.Engine.BlockSize, NumBlocks: cfg.Engine.NumBlocks, MaxNumSeqs: cfg.Engine.MaxNumSeqs,
			MaxNumBatchedTokens: cfg.Engine.MaxNumBatchedTokens, Profile: cfg.Engine.Profile.Name,
			FleetPrefillTokS: capacity, TraceTokS: prompt, TraceWorkTokS: offered, DecodeTokenWork: DecodeTokenWork(cfg.Engine), ScrapeIntervalS: cfg.ScrapeInterval.Seconds(),
			SLOTTFTS: cfg.SLO.TTFT.Seconds(), SLOTPOTS: cfg.SLO.TPOT.Seconds(), Seeds: cfg.Seeds, Policies: cfg.Policies,
		},
		Rows: rows, Summary: summarize(rows),
	}, nil
}
