package proxy

import (
	"slices"
	"sync"
	"time"
)

// Stats is the proxy's bookkeeping per policy: requests, prompt and
// cached tokens (from the engines' usage), routing latency, and the
// cumulative prefix-cache hit rate over time (the dashboard's chart).
// It is safe for concurrent use.
type Stats struct {
	now func() time.Time
	// headline is the policy whose route latency the snapshot's headline
	// gives: the proxy's default. A demo runs baselines through the same
	// proxy, and their latency is not kvrouter's.
	headline Policy

	mu       sync.Mutex
	policies map[Policy]*policyStats
	order    []Policy // first use order
	// perSecond counts routes in the last rateWindow seconds, by second.
	perSecond [rateWindow]struct {
		sec int64
		n   uint64
	}
	note string
}

const (
	rateWindow    = 10   // seconds the route rate is averaged over
	latencyWindow = 8192 // latest samples kept for percentiles
	maxPoints     = 240  // chart points kept per policy (halved when full)
	pointEvery    = 250 * time.Millisecond
)

type policyStats struct {
	requests, failed, routeFailed uint64
	rejected                      uint64 // 429: no engine had a free slot
	held                          uint64 // held before routing (hold.go)
	withUsage                     uint64
	promptTokens, cachedTokens    uint64
	routeUs, tokenizeUs           ring
	start, lastPoint              time.Time
	series                        []Point
}

// Point is one chart point: seconds since the policy's first request and
// its cumulative hit rate then.
type Point struct {
	T       float64 `json:"t"`
	HitRate float64 `json:"hit_rate"`
}

// ring keeps the latest latencyWindow samples.
type ring struct {
	v    []float64
	next int
}

func (r *ring) add(x float64) {
	if len(r.v) < latencyWindow {
		r.v = append(r.v, x)
		return
	}
	r.v[r.next] = x
	r.next = (r.next + 1) % latencyWindow
}

// percentile returns the q-quantile (nearest rank) of the samples.
func (r *ring) percentile(q float64) float64 {
	if len(r.v) == 0 {
		return 0
	}
	s := slices.Clone(r.v)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func newStats(now func() time.Time, headline Policy) *Stats {
	return &Stats{now: now, headline: headline, policies: map[Policy]*policyStats{}}
}

func (s *Stats) policyLocked(p Policy) *policyStats {
	ps, ok := s.policies[p]
	if !ok {
		ps = &policyStats{start: s.now()}
		s.policies[p] = ps
		s.order = append(s.order, p)
	}
	return ps
}

func (s *Stats) routed(p Policy, route, tokenize time.Duration) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	ps := s.policyLocked(p)
	ps.requests++
	ps.routeUs.add(float64(route.Nanoseconds()) / 1e3)
	if tokenize > 0 {
		ps.tokenizeUs.add(float64(tokenize.Nanoseconds()) / 1e3)
	}
	sec := now.Unix()
	b := &s.perSecond[sec%rateWindow]
	if b.sec != sec {
		b.sec, b.n = sec, 0
	}
	b.n++
}

func (s *Stats) routeFailed(p Policy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policyLocked(p).routeFailed++
}

// held counts a request held before routing (hold.go).
func (s *Stats) held(p Policy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policyLocked(p).held++
}

// rejected counts a request answered 429: no engine had a free slot.
func (s *Stats) rejected(p Policy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policyLocked(p).rejected++
}

func (s *Stats) failed(p Policy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policyLocked(p).failed++
}

// completed counts an answered request; its usage when the engine gave
// one (a stream gives it only when asked for).
func (s *Stats) completed(p Policy, promptTokens int, u Usage, haveUsage bool) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	ps := s.policyLocked(p)
	if !haveUsage {
		return
	}
	ps.withUsage++
	ps.promptTokens += uint64(max(u.PromptTokens, 0))
	ps.cachedTokens += uint64(max(u.CachedTokens, 0))
	if now.Sub(ps.lastPoint) >= pointEvery {
		ps.lastPoint = now
		if len(ps.series) >= maxPoints {
			// Keep every other point: the whole run stays on the chart.
			half := ps.series[:0]
			for i := 0; i < len(ps.series); i += 2 {
				half = append(half, ps.series[i])
			}
			ps.series = half
		}
		ps.series = append(ps.series, Point{T: now.Sub(ps.start).Seconds(), HitRate: ps.hitRate()})
	}
}

func (ps *policyStats) hitRate() float64 {
	if ps.promptTokens == 0 {
		return 0
	}
	return float64(ps.cachedTokens) / float64(ps.promptTokens)
}

// SetNote sets a line of text the dashboard shows (the demo's phase).
func (s *Stats) SetNote(note string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.note = note
}

// PolicyStats is one policy's figures.
type PolicyStats struct {
	Policy        Policy  `json:"policy"`
	Requests      uint64  `json:"requests"`
	Failed        uint64  `json:"failed"`
	RouteFailed   uint64  `json:"route_failed"`
	Rejected      uint64  `json:"rejected"` // answered 429: every engine at its limit
	Held          uint64  `json:"held"`     // held before routing while every engine had a step's prefill queued
	WithUsage     uint64  `json:"with_usage"`
	PromptTokens  uint64  `json:"prompt_tokens"`
	CachedTokens  uint64  `json:"cached_tokens"`
	HitRate       float64 `json:"hit_rate"`
	RouteP50Us    float64 `json:"route_p50_us"`
	RouteP99Us    float64 `json:"route_p99_us"`
	TokenizeP50Us float64 `json:"tokenize_p50_us"`
	Series        []Point `json:"series"`
}

// Snapshot is the Stats at one moment.
type Snapshot struct {
	Note          string  `json:"note"`
	RoutesPerSec  float64 `json:"routes_per_sec"`
	RouteRequests uint64  `json:"route_requests"`
	// RouteP50Us and RouteP99Us are RoutePolicy's (the proxy's default
	// policy), or every policy's when it has routed nothing (RoutePolicy
	// empty). Policies has each one's.
	RoutePolicy Policy        `json:"route_policy,omitempty"`
	RouteP50Us  float64       `json:"route_p50_us"`
	RouteP99Us  float64       `json:"route_p99_us"`
	Policies    []PolicyStats `json:"policies"`
}

// Snapshot returns the figures now.
func (s *Stats) Snapshot() Snapshot {
	now := s.now().Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Snapshot{Note: s.note, Policies: make([]PolicyStats, 0, len(s.order))}
	var n uint64
	for _, b := range s.perSecond {
		// The current second is still filling: average the full ones.
		if b.sec < now && b.sec >= now-rateWindow {
			n += b.n
		}
	}
	out.RoutesPerSec = float64(n) / rateWindow
	var all ring
	for _, p := range s.order {
		ps := s.policies[p]
		out.RouteRequests += ps.requests
		for _, v := range ps.routeUs.v {
			all.add(v)
		}
		out.Policies = append(out.Policies, PolicyStats{
			Policy: p, Requests: ps.requests, Failed: ps.failed, RouteFailed: ps.routeFailed, Rejected: ps.rejected, Held: ps.held, WithUsage: ps.withUsage,
			PromptTokens: ps.promptTokens, CachedTokens: ps.cachedTokens, HitRate: ps.hitRate(),
			RouteP50Us: ps.routeUs.percentile(0.5), RouteP99Us: ps.routeUs.percentile(0.99),
			TokenizeP50Us: ps.tokenizeUs.percentile(0.5), Series: slices.Clone(ps.series),
		})
	}
	head := &all
	if ps, ok := s.policies[s.headline]; ok && len(ps.routeUs.v) > 0 {
		head, out.RoutePolicy = &ps.routeUs, s.headline
	}
	out.RouteP50Us, out.RouteP99Us = head.percentile(0.5), head.percentile(0.99)
	return out
}

// Reset forgets every figure (a demo's warm-up requests).
func (s *Stats) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policies, s.order = map[Policy]*policyStats{}, nil
	s.perSecond = [rateWindow]struct {
		sec int64
		n   uint64
	}{}
}
