package route

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// engineTruth is a rank's real timing, for feeding the model observations
// as a router would see them.
type engineTruth struct{ a, b, c, d float64 }

func (e engineTruth) ttft(work uint64, k float64) float64 {
	x := float64(work) / 1000
	return e.a + e.b*x + k*(e.d+e.c*x)
}

// observeMany feeds n observations of random work (0..32k tokens) and
// decode state, with noise of +-5 %.
func observeMany(m *ttftModel, p TTFTPrior, truth engineTruth, n int, rng *rand.Rand) {
	for range n {
		work := uint64(rng.IntN(32_000))
		k := float64(rng.IntN(2))
		m.observe(p, p.theta(), work, k, 0, truth.ttft(work, k)*(0.95+0.1*rng.Float64()))
	}
}

func TestTTFTModelStartsAtThePrior(t *testing.T) {
	p := DefaultTTFTPrior()
	m := newTTFTModel(p)
	got := m.predict(4000, 2000, 1, 0)
	assert.InDelta(t, p.SecondsPerKTok*4, got.QueueS, 1e-12)
	assert.InDelta(t, p.OverheadS+p.SecondsPerKTok*2, got.PrefillS, 1e-12)
	assert.InDelta(t, p.DecodeS+p.DecodeSPerKTok*6, got.DecodeS, 1e-12)
	assert.InDelta(t, got.QueueS+got.PrefillS+got.DecodeS+got.AdmitS, got.TotalS, 1e-12)
	assert.InDelta(t, 1000/p.SecondsPerKTok, got.TokensPerS, 1e-9)
	assert.Zero(t, m.predict(4000, 2000, 0, 0).DecodeS, "no decode running, no decode term")
	assert.Zero(t, m.predict(4000, 2000, 1, 30).AdmitS, "the prior's e is 0: waiting costs nothing until learned")
}

func TestTTFTModelConvergesWithinAFewHundredObservations(t *testing.T) {
	p := DefaultTTFTPrior()
	for _, truth := range []engineTruth{
		{a: 0.05, b: 0.04, c: 0.01, d: 0.03},  // half the prior's throughput
		{a: 0.01, b: 0.01, c: 0.002, d: 0.01}, // twice it
	} {
		t.Run(fmt.Sprintf("%+v", truth), func(t *testing.T) {
			m := newTTFTModel(p)
			observeMany(m, p, truth, 300, rand.New(rand.NewPCG(1, 2)))
			for _, c := range []struct {
				work uint64
				k    float64
			}{{1000, 0}, {8000, 0}, {8000, 1}, {30_000, 1}} {
				want := truth.ttft(c.work, c.k)
				got := m.predict(0, c.work, c.k, 0).TotalS
				assert.InEpsilon(t, want, got, 0.1, "work %d decode %v", c.work, c.k)
			}
			assert.InEpsilon(t, 1000/truth.b, m.predict(0, 0, 0, 0).TokensPerS, 0.1, "the learned throughput")
		})
	}
}

// One rank of a fleet slows down 3x (a minute at a few requests a second
// is ~150 of its requests): its speed against the fleet's model follows,
// and its predictions with it; the fleet's model, fitted from every rank,
// hardly moves.
func TestRankSpeedFollowsDrift(t *testing.T) {
	p := DefaultTTFTPrior()
	fleet := newTTFTModel(p)
	rng := rand.New(rand.NewPCG(3, 4))
	base := engineTruth{a: 0.03, b: 0.02, c: 0.003, d: 0.02}
	ranks := make([]*rankModel, 4)
	for i := range ranks {
		ranks[i] = &rankModel{}
	}
	step := func(slow float64) {
		for i, r := range ranks {
			work := uint64(rng.IntN(32_000))
			k := float64(rng.IntN(2))
			s := base.ttft(work, k) * (0.95 + 0.1*rng.Float64())
			if i == 0 {
				s *= slow
			}
			r.observe(s, fleet.totalS(work, k, 0))
			fleet.observe(p, p.theta(), work, k, 0, s)
		}
	}
	for range 300 {
		step(1)
	}
	assert.InEpsilon(t, 1, ranks[0].speed(), 0.05)
	for range 150 {
		step(3)
	}
	want := 3 * base.ttft(16_000, 1)
	got := fleet.predictScaled(0, 16_000, 1, 0, ranks[0].speed()).TotalS
	assert.InEpsilon(t, want, got, 0.1, "the slowed rank")
	assert.InEpsilon(t, base.ttft(16_000, 1), fleet.predictScaled(0, 16_000, 1, 0, ranks[1].speed()).TotalS, 0.1, "the others")
}

func TestRankSpeedIgnoresBadObservations(t *testing.T) {
	r := &rankModel{}
	for _, c := range []struct{ s, fleet float64 }{{-1, 1}, {nanF(), 1}, {infF(), 1}, {2 * ttftMaxSampleS, 1}, {1, 0}, {1, nanF()}, {1, -1}} {
		r.observe(c.s, c.fleet)
	}
	assert.Zero(t, r.n)
	assert.Equal(t, 1.0, r.speed())
	r.observe(3000, 1e-3) // clamped: one wild sample moves it by rankSpeedRate * ln 100
	assert.InDelta(t, rankSpeedRate*math.Log(100), r.logSpeed, 1e-12)
}

func TestTTFTModelIgnoresBadObservations(t *testing.T) {
	p := DefaultTTFTPrior()
	m := newTTFTModel(p)
	before := m.theta
	for _, s := range []float64{-1, nanF(), infF(), 2 * ttftMaxSampleS} {
		m.observe(p, p.theta(), 1000, 0, 0, s)
	}
	assert.Equal(t, before, m.theta)
	assert.Zero(t, m.n)
}

func nanF() float64 { z := 0.0; return z / z }
func infF() float64 { z := 0.0; return 1 / z }

func TestTTFTPriorValidates(t *testing.T) {
	ok := DefaultTTFTPrior()
	require.NoError(t, ok.Validate())
	for name, mut := range map[string]func(*TTFTPrior){
		"zero slope":      func(p *TTFTPrior) { p.SecondsPerKTok = 0 },
		"negative":        func(p *TTFTPrior) { p.OverheadS = -1 },
		"NaN":             func(p *TTFTPrior) { p.DecodeS = nanF() },
		"forget 0":        func(p *TTFTPrior) { p.ForgetPerSample = 0 },
		"forget above 1":  func(p *TTFTPrior) { p.ForgetPerSample = 1.5 },
		"decode too slow": func(p *TTFTPrior) { p.DecodeSPerKTok = 1e9 },
	} {
		p := ok
		mut(&p)
		assert.ErrorIs(t, p.Validate(), ErrInvalidParams, name)
	}
}

// The router learns from its own prefill_done times: a rank whose first
// tokens come late is predicted slower than one whose come early, and new
// work goes to the fast one; a rank it never routed to predicts what the
// fleet does (not the static prior: ranks faster than the prior would
// otherwise starve the ones not yet tried).
func TestRouterLearnsFromPrefillDone(t *testing.T) {
	p := DefaultParams()
	p.Cost = CostTTFT
	f := newFixture(t, 3, Options{Params: &p})
	prompt := tokens(1, 4000)
	only := func(w uint64) func(uint64) bool { return func(id uint64) bool { return id == w } }
	for i := range 200 {
		for _, rank := range []struct {
			id  uint64
			ttf time.Duration
		}{{0, time.Second}, {1, 100 * time.Millisecond}} { // 10x and 1x the prior's 4000 tokens
			id := fmt.Sprint(rank.id, "-", i)
			d, err := f.r.Route(Request{Model: "m", TokenIDs: prompt, RequestID: id, Eligible: only(rank.id)})
			require.NoError(t, err)
			require.Equal(t, rank.id, d.WorkerID)
			f.clock.Advance(rank.ttf)
			require.True(t, f.r.PrefillDone(id))
			require.True(t, f.r.Free(id))
		}
	}
	d, err := f.r.Route(Request{Model: "m", TokenIDs: prompt, RequestID: "next"})
	require.NoError(t, err)
	assert.Equal(t, uint64(1), d.WorkerID, "the fast rank")
	terms := map[uint64]TTFTTerms{}
	for _, c := range d.Candidates {
		terms[c.WorkerID] = c.TTFT
	}
	assert.Equal(t, uint64(200), terms[0].Observations)
	assert.InEpsilon(t, 1.0, terms[0].TotalS, 0.1, "rank 0 predicts what it showed")
	assert.InEpsilon(t, 0.1, terms[1].TotalS, 0.15, "rank 1 predicts what it showed")
	assert.Zero(t, terms[2].Observations)
	assert.Greater(t, terms[2].TotalS, terms[1].TotalS, "the untried rank: the fleet's average")
	assert.Less(t, terms[2].TotalS, terms[0].TotalS, "the untried rank: the fleet's average")
}

// A hot prefix held by one rank, fully cached there: without the guard
// every request would go to it. Its share of a burst stays bounded, and
// it still takes the most.
func TestFloodGuardBoundsARanksShare(t *testing.T) {
	p := DefaultParams()
	p.Cost = CostTTFT
	f := newFixture(t, 8, Options{Params: &p})
	prompt := tokens(1, 4000)
	f.cache(3, prompt, len(prompt)/bs)
	per := map[uint64]int{}
	for i := range 200 {
		d, err := f.r.Route(Request{Model: "m", TokenIDs: prompt, RequestID: fmt.Sprint(i)})
		require.NoError(t, err)
		per[d.WorkerID]++
		f.clock.Advance(10 * time.Millisecond) // 100 a second, none finishing
	}
	assert.Greater(t, per[3], 200/8, "the holder takes more than a fair share: %v", per)
	assert.Less(t, per[3], 200*2/5, "but not the burst: at most ~2x the mean rate plus slack: %v", per)
	// The overflow replicates the prefix: a rank sent it counts its
	// in-flight blocks as cached for the next ones (they are computed
	// before their turn), so the hot prefix spreads over a few ranks.
	for w, n := range per {
		assert.Less(t, n, 200*2/5, "worker %d flooded: %v", w, per)
	}
	assert.GreaterOrEqual(t, len(per), 3, "the prefix replicated: %v", per)
}

// Whatever it observes, the model's coefficients stay finite and within
// their clamps, and its predictions finite and non-negative.
func FuzzTTFTModel(f *testing.F) {
	f.Add(uint64(1000), 0.5, 0.2, uint64(0), 1e-9, uint8(3))
	f.Add(uint64(1<<40), 1.0, 1e9, uint64(1<<60), 0.0, uint8(200))
	f.Fuzz(func(t *testing.T, work uint64, k, seconds float64, q uint64, s2 float64, n uint8) {
		p := DefaultTTFTPrior()
		m := newTTFTModel(p)
		for i := range int(n) {
			s := seconds
			if i%2 == 1 {
				s = s2
			}
			m.observe(p, p.theta(), work+uint64(i), k, float64(n%7), s)
		}
		for _, v := range m.theta {
			require.False(t, v != v || v < 0 || v > 60, "theta %v", m.theta)
		}
		got := m.predict(q, work, 1, float64(n))
		require.True(t, got.TotalS >= 0 && got.TotalS <= math.MaxFloat64, "total %v", got.TotalS)
	})
}
