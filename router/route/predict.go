package route

import (
	"fmt"
	"math"
)

// The predicted-TTFT cost (CostTTFT) estimates, per candidate rank, the
// time from routing to the request's first token:
//
//	queue_s   = b * Q                  Q: the uncached prompt tokens the router sent the rank and
//	                                      that are not prefilled yet (exact: it knows what it sent
//	                                      and the overlap it saw)
//	prefill_s = a + b * U              U: this prompt's tokens after its cached prefix on the rank
//	decode_s  = k * (d + c * (Q + U))  k: 1 when the rank runs decodes (the router's own requests
//	                                      past their first token), else 0
//	admit_s   = e * W                  W: the requests waiting in the engine for a slot: its
//	                                      num_requests_waiting gauge as last scraped, moved by the
//	                                      requests the router routed there and ended since (0 when
//	                                      the scrape showed none waiting, or is stale)
//	total_s   = queue_s + prefill_s + decode_s + admit_s
//
// a is the per-request overhead (the step the request waits for, the
// scheduler), b the seconds per thousand prefill tokens (1 / throughput),
// c what a running decode batch adds per thousand prefill tokens (every
// step that carries a prefill chunk also carries the decodes), e the
// seconds each request waiting for a slot adds (an engine at its
// max_num_seqs or out of KV blocks admits a request only when a running
// one ends, whatever its prefill queue). They are learned online from what
// a real router observes: each request's time from routing to its first
// token (prefill_done, or the proxy's first byte) against the (Q + U,
// busy, W) it was routed with.
//
// The fleet's engines share one shape (the same model on the same
// software): the five coefficients are one least-squares fit over every
// rank's observations, with exponential forgetting (ttft prior's
// ForgetPerSample: the last ~1,000 observations) and a weak ridge pull
// towards the prior (the engine profile's numbers). Each rank has one
// learned number of its own, its speed against that fit: the decayed mean
// of log(observed / the fit's prediction) (rankSpeedRate per observation:
// the last ~50 of its requests), so a rank that slows down 3x is followed
// within ~150 of its requests. (Five coefficients per rank, each fitted
// from its own ~50 observations, measured worse: under saturation the
// queue, the waiting count and the TTFT rise together, the per-rank fits
// wandered (one rank learned 4x the others' throughput and was sent
// everyone's cold prefixes), and the fleet's TTFT p90 doubled on the
// generated tenants family at load 1.0.)

// TTFTPrior is the predicted-TTFT model's starting point for a rank with
// no history: Dynamo's mocker profile (prefill ms = 4.21e-7 T^2 + 0.0152 T
// + 16.5 for T batched tokens, decode ms up to ~34 at full KV use) at its
// 8,192-token step: ~48k prefill tokens/s, one step of overhead, and a
// decode share of ~26 ms a step at half KV use.
type TTFTPrior struct {
	OverheadS       float64 // a
	SecondsPerKTok  float64 // b
	DecodeSPerKTok  float64 // c
	DecodeS         float64 // d
	WaitSPerRequest float64 // e: seconds per request waiting in the engine for a slot
	ForgetPerSample float64 // the weight an observation keeps per later observation, (0, 1]
}

// Validate reports a prior that cannot predict: a coefficient negative or
// not finite, a zero slope, a forgetting factor outside (0, 1].
func (p TTFTPrior) Validate() error {
	ok := func(v float64) bool { return v >= 0 && v <= 60 }
	if !ok(p.OverheadS) || !ok(p.DecodeSPerKTok) || !ok(p.DecodeS) || !ok(p.WaitSPerRequest) || !(p.SecondsPerKTok > 0 && p.SecondsPerKTok <= 60) ||
		!(p.ForgetPerSample > 0 && p.ForgetPerSample <= 1) {
		return fmt.Errorf("%w: TTFT prior %+v", ErrInvalidParams, p)
	}
	return nil
}

// DefaultTTFTPrior is the mocker profile's prior; e starts at 0 (an engine
// below its limits admits at once), learned when waiting requests show.
func DefaultTTFTPrior() TTFTPrior {
	return TTFTPrior{OverheadS: 0.03, SecondsPerKTok: 0.0206, DecodeSPerKTok: 0.0032, DecodeS: 0.02, ForgetPerSample: 0.999}
}

// rankSpeedRate: how far one observation moves a rank's log speed.
const rankSpeedRate = 0.02

// ttftMaxSampleS: the longest routing-to-first-token time learned from.
const ttftMaxSampleS = 3600

// ttftPriorWaiting: the ridge scale of the waiting-requests feature, a
// typical waiting queue.
const ttftPriorWaiting = 8.0

// ttftScaleKTok: the tokens-per-thousand unit the fit works in, so its
// sums stay well conditioned.
const ttftScaleKTok = 1000.0

// The ridge prior's weight, in observations at a typical batch (8k
// tokens): the prior still decides the fleet's first few requests, and is
// a tenth of a percent of a full memory of observations.
const (
	ttftPriorWeight = 1.0
	ttftPriorKTok   = 8.0
)

// ttftModel is the fleet's fitted coefficients and the decayed sums they
// are solved from (features f = [1, x, busy*x, busy, waiting], target y
// seconds).
type ttftModel struct {
	theta [nFeat]float64 // a, b, c, d, e
	ftf   [nFeat][nFeat]float64
	fty   [nFeat]float64
	n     uint64 // observations
}

// totalS is the model's predicted seconds for the features of an
// observation.
func (m *ttftModel) totalS(work uint64, k, w float64) float64 {
	x := float64(work) / ttftScaleKTok
	return m.theta[0] + m.theta[1]*x + k*(m.theta[2]*x+m.theta[3]) + m.theta[4]*w
}

// rankModel is one rank's speed against the fleet's model: predictions
// for it are the fleet's times exp(logSpeed).
type rankModel struct {
	logSpeed float64
	n        uint64 // observations
}

// speed is the factor the rank's times are of the fleet's model's.
func (m *rankModel) speed() float64 { return math.Exp(m.logSpeed) }

// observe moves the rank's speed towards seconds / fleetS, what the
// fleet's model predicted for the observation. Out-of-range samples are
// dropped; a ratio is clamped to [1/100, 100] (one wild first token moves
// the speed by at most 9 %).
func (m *rankModel) observe(seconds, fleetS float64) {
	if !(seconds >= 0 && seconds <= ttftMaxSampleS) || !(fleetS > 0) {
		return
	}
	r := clamp(max(seconds, 1e-4)/fleetS, 0.01, 100)
	m.logSpeed += rankSpeedRate * (math.Log(r) - m.logSpeed)
	m.n++
}

const nFeat = 5

func (p TTFTPrior) theta() [nFeat]float64 {
	return [nFeat]float64{p.OverheadS, p.SecondsPerKTok, p.DecodeSPerKTok, p.DecodeS, p.WaitSPerRequest}
}

func newTTFTModel(p TTFTPrior) *ttftModel {
	return &ttftModel{theta: p.theta()}
}

// TTFTTerms is one candidate's predicted TTFT, by term (seconds), and what
// it was predicted from.
type TTFTTerms struct {
	QueueS   float64 `json:"queue_s"`
	PrefillS float64 `json:"prefill_s"`
	DecodeS  float64 `json:"decode_s"`
	// AdmitS: e * W, the wait for a slot behind the engine's waiting
	// requests (its scraped gauge).
	AdmitS float64 `json:"admit_s"`
	TotalS float64 `json:"total_s"`
	// OwnWorkS: the prefill this request adds to the rank (b * U, plus
	// its decode share): what every later request routed there waits for.
	OwnWorkS float64 `json:"own_work_s"`
	// OverheadS: a, the rank's learned per-request overhead (in PrefillS).
	OverheadS float64 `json:"overhead_s"`
	// WorkWeight: how much OwnWorkS weighs in the score beside TotalS,
	// from the fleet's mean queue (0 idle, up to workMax saturated).
	WorkWeight   float64 `json:"work_weight"`
	CachedTokens int     `json:"cached_tokens"`
	QueuedTokens uint64  `json:"queued_tokens"`
	TokensPerS   float64 `json:"tokens_per_s"`  // the learned prefill throughput, 1000 / (b * speed)
	SpeedFactor  float64 `json:"speed_factor"`  // the rank's speed against the fleet's model (its times are the fleet's times this)
	Observations uint64  `json:"observations"`  // the rank's own prefill_done observations so far (0: the terms are the fleet's model)
	DecodeFactor float64 `json:"decode_factor"` // k: 1 when the rank runs decodes, else 0
	// WaitingRequests: W, the engine's waiting requests (scraped gauge,
	// moved by the router's routes and ends since the scrape).
	WaitingRequests float64 `json:"waiting_requests"`
	WaitSPerRequest float64 `json:"wait_s_per_request"` // e, learned
}

// predict returns the terms for queued tokens q, uncached tokens u, the
// rank's decode factor k and waiting requests w.
func (m *ttftModel) predict(q, u uint64, k, w float64) TTFTTerms {
	var t TTFTTerms
	m.predictInto(&t, q, u, k, w)
	return t
}

// predictScaled is predict with every coefficient times scale (a rank's
// speed).
func (m *ttftModel) predictScaled(q, u uint64, k, w, scale float64) TTFTTerms {
	var t TTFTTerms
	m.predictScaledInto(&t, q, u, k, w, scale)
	return t
}

// predictInto is predict into t, every field set.
func (m *ttftModel) predictInto(t *TTFTTerms, q, u uint64, k, w float64) {
	m.predictScaledInto(t, q, u, k, w, 1)
}

// predictScaledInto is predictInto with every coefficient times scale.
func (m *ttftModel) predictScaledInto(t *TTFTTerms, q, u uint64, k, w, scale float64) {
	a, b, c, d, e := m.theta[0]*scale, m.theta[1]*scale, m.theta[2]*scale, m.theta[3]*scale, m.theta[4]*scale
	qk, uk := float64(q)/ttftScaleKTok, float64(u)/ttftScaleKTok
	t.QueueS, t.PrefillS, t.OverheadS, t.QueuedTokens = b*qk, a+b*uk, a, q
	t.TokensPerS, t.Observations, t.DecodeFactor, t.SpeedFactor = ttftScaleKTok/b, m.n, k, scale
	t.OwnWorkS = b*uk + k*c*uk
	t.DecodeS = k * (d + c*(qk+uk))
	t.AdmitS, t.WaitingRequests, t.WaitSPerRequest = e*w, w, e
	t.TotalS = finite(t.QueueS + t.PrefillS + t.DecodeS + t.AdmitS)
	t.WorkWeight, t.CachedTokens = 0, 0
}

// observe fits one observation, pulled towards prior: a request routed
// with work tokens (queued + its own uncached), decode factor k and w
// requests waiting ahead in the engine took seconds to its first token.
func (m *ttftModel) observe(p TTFTPrior, prior [nFeat]float64, work uint64, k, w float64, seconds float64) {
	// Out-of-range samples would poison the sums for good: a TTFT beyond
	// an hour, a decode factor that is not one, work beyond 2^40 tokens,
	// a waiting queue beyond a million requests.
	if !(seconds >= 0 && seconds <= ttftMaxSampleS) || !(k >= 0 && k <= 1) || work > 1<<40 || !(w >= 0 && w <= 1<<20) {
		return
	}
	x := float64(work) / ttftScaleKTok
	f := [nFeat]float64{1, x, k * x, k, w}
	lam := p.ForgetPerSample
	for i := range nFeat {
		m.fty[i] = lam*m.fty[i] + f[i]*seconds
		for j := range nFeat {
			m.ftf[i][j] = lam*m.ftf[i][j] + f[i]*f[j]
		}
	}
	m.n++
	m.solve(prior)
}

// solve sets theta to the ridge solution (F'F + L) theta = F'y + L prior,
// clamped to plausible values; a singular system keeps the old theta.
func (m *ttftModel) solve(prior [nFeat]float64) {
	k2 := ttftPriorWeight * ttftPriorKTok * ttftPriorKTok
	reg := [nFeat]float64{ttftPriorWeight, k2, k2, ttftPriorWeight, ttftPriorWeight * ttftPriorWaiting * ttftPriorWaiting}
	var a [nFeat][nFeat + 1]float64
	for i := range nFeat {
		for j := range nFeat {
			a[i][j] = m.ftf[i][j]
		}
		a[i][i] += reg[i]
		a[i][nFeat] = m.fty[i] + reg[i]*prior[i]
	}
	sol, ok := solveLinear(a)
	if !ok {
		return
	}
	m.theta = [nFeat]float64{
		clamp(sol[0], 0, 60),
		clamp(sol[1], 1e-5, 60), // >= 100M tokens/s: never a zero or negative slope
		clamp(sol[2], 0, 60),
		clamp(sol[3], 0, 60),
		clamp(sol[4], 0, 60),
	}
}

// solveLinear solves an augmented nFeat x nFeat system by Gaussian
// elimination with partial pivoting.
func solveLinear(a [nFeat][nFeat + 1]float64) ([nFeat]float64, bool) {
	for col := range nFeat {
		piv := col
		for r := col + 1; r < nFeat; r++ {
			if math.Abs(a[r][col]) > math.Abs(a[piv][col]) {
				piv = r
			}
		}
		if !(math.Abs(a[piv][col]) > 1e-12) {
			return [nFeat]float64{}, false
		}
		a[col], a[piv] = a[piv], a[col]
		for r := range nFeat {
			if r == col {
				continue
			}
			k := a[r][col] / a[col][col]
			for c := col; c <= nFeat; c++ {
				a[r][c] -= k * a[col][c]
			}
		}
	}
	var x [nFeat]float64
	for i := range nFeat {
		x[i] = a[i][nFeat] / a[i][i]
		if math.IsNaN(x[i]) || math.IsInf(x[i], 0) {
			return x, false
		}
	}
	return x, true
}

func clamp(v, lo, hi float64) float64 { return math.Min(hi, math.Max(lo, v)) }

// decodeFactor is k for a rank with requests in flight, of which
// prefilling are before their first token. (Scaling it by the rank's
// active KV blocks, as a decode step's time grows with them, measured
// worse on the Mooncake trace: it pushed load off the warm ranks.)
func decodeFactor(requests, prefilling int) float64 {
	if requests <= prefilling {
		return 0
	}
	return 1
}
