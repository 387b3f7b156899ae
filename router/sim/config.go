package sim

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/kvhash/kvhash/internal/mooncake"
	"github.com/kvhash/kvhash/router/engine"
	"github.com/kvhash/kvhash/router/route"
	"github.com/kvhash/kvhash/router/route/policy"
)

// Trace is a named Mooncake-format trace.
type Trace struct {
	Name     string
	Requests []mooncake.Request[float64]
}

// SLO is the goodput criterion: a request counts when its TTFT and its
// TPOT are both within bounds.
type SLO struct {
	TTFT time.Duration
	TPOT time.Duration
}

// Config is one simulation sweep: every (load, policy, seed).
type Config struct {
	Trace   Trace
	Engines int
	// Loads: the trace's work per second after the best caching any
	// router could earn (OfferedWorkRate: the prompt tokens the pooled LRU
	// bound misses, plus output tokens) over the fleet's token capacity
	// (FleetPrefillCapacity), each set by scaling the trace's timestamps:
	// at 1.0 an ideal router keeps the fleet busy. Exactly one of Loads and
	// RateScales is set.
	Loads []float64
	// RateScales: arrival-rate multipliers (2 = timestamps halved).
	RateScales []float64
	Policies   []string
	// Seeds: runs per (load, policy), seeded 1..Seeds.
	Seeds  int
	Engine engine.Config
	// Dynamo: the dynamo policy's knobs.
	Dynamo route.Params
	// NoAdmission: kvrouter routes every request when it arrives and
	// sends it at once, instead of holding requests at the router while
	// the fleet is saturated and while their engine runs its
	// max_num_seqs (router/route/admit).
	NoAdmission bool
	// ScrapeInterval: how often engines' gauges are snapshot for policies
	// that read /metrics.
	ScrapeInterval time.Duration
	SLO            SLO
	// Parallel: runs at once; 0: GOMAXPROCS.
	Parallel int
	// Progress, when set, is called after each run (from one goroutine at
	// a time).
	Progress func(done, total int, r Row, elapsed time.Duration)
}

// DefaultConfig: 8 engines of Dynamo's mocker defaults, every policy, the
// issue's five loads, one seed, a 1 s scrape, SLO TTFT 2 s and TPOT 50 ms.
func DefaultConfig() Config {
	return Config{
		Engines:        8,
		Loads:          []float64{0.3, 0.5, 0.8, 1.0, 1.2},
		Policies:       policy.Names(),
		Seeds:          1,
		Engine:         engine.DefaultConfig(),
		Dynamo:         route.DefaultParams(),
		ScrapeInterval: time.Second,
		SLO:            SLO{TTFT: 2 * time.Second, TPOT: 50 * time.Millisecond},
	}
}

// ErrConfig wraps every configuration error.
var ErrConfig = errors.New("sim config")

// Validate reports every bad setting at once.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(c.Trace.Requests) == 0 {
		bad("the trace has no requests")
	}
	if c.Engines <= 0 {
		bad("engines %d: must be positive", c.Engines)
	}
	if (len(c.Loads) == 0) == (len(c.RateScales) == 0) {
		bad("give loads or rate scales, not both nor neither")
	}
	for _, x := range append(append([]float64(nil), c.Loads...), c.RateScales...) {
		if !(x > 0) || x > 1e6 {
			bad("load or rate scale %v: must be positive", x)
		}
	}
	if len(c.Policies) == 0 {
		bad("no policy")
	}
	for _, p := range c.Policies {
		if !policy.Known(p) {
			bad("policy %q: want one of %v", p, policy.Names())
		}
	}
	if c.Seeds <= 0 {
		bad("seeds %d: must be positive", c.Seeds)
	}
	if err := c.Engine.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Dynamo.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.ScrapeInterval <= 0 {
		bad("scrape interval %v: must be positive", c.ScrapeInterval)
	}
	if c.SLO.TTFT <= 0 || c.SLO.TPOT <= 0 {
		bad("SLO %v / %v: both must be positive", c.SLO.TTFT, c.SLO.TPOT)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

func (c Config) parallel() int {
	if c.Parallel > 0 {
		return c.Parallel
	}
	return runtime.GOMAXPROCS(0)
}
