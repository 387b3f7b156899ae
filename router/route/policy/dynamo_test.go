package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/route"
)

// The reference's weakness of Dynamo's default cost: an 890-block prompt;
// worker 1 is idle and cold (890 prefill + 890 decode = 1780); worker 2
// holds 880 of its blocks but runs one unrelated 940-block request whose
// prefill is done (10 + 940 + 890 = 1840). Dynamo's cold worker wins and
// pays the whole prefill; kvrouter's predicted TTFT (10 blocks to prefill
// beside a running decode against 890 blocks) sends it to the warm one.
func TestDynamoColdWorkerWeakness(t *testing.T) {
	for _, tc := range []struct {
		name        string
		pick        int
		prefillToks uint64
		why         string
	}{
		{Dynamo, 0, 890 * testBS, "the cold idle worker wins and pays the whole prefill"},
		{KVRouter, 1, 10 * testBS, "the warm worker wins and prefills 10 blocks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFleet(t, 2)
			env := f.env(1)
			env.Dynamo = route.DefaultParams()
			p, err := New(tc.name, env)
			require.NoError(t, err)
			tr := p.(Tracker)
			// Worker 2 alone: the unrelated request lands there.
			i, err := p.Pick(f.query("other", tokens(1_000_000, 940*testBS)), rowsOf(2))
			require.NoError(t, err)
			require.Equal(t, 0, i)
			tr.PrefillDone("other")
			f.add(1)
			prompt := tokens(0, 890*testBS)
			f.store(2, prompt[:880*testBS])

			rt := p.(interface{ Router() *route.Router }).Router()
			i, err = p.Pick(f.query("q", prompt), rowsOf(1, 2))
			require.NoError(t, err)
			assert.Equal(t, tc.pick, i, tc.why)
			var prefill uint64
			for _, w := range rt.Stats().Workers {
				prefill += w.PrefillTokens
			}
			assert.Equal(t, tc.prefillToks, prefill, tc.why)
		})
	}
}

// The costs themselves, from the production formula.
func TestDynamoColdWorkerCosts(t *testing.T) {
	p := route.DefaultParams()
	cold, _ := route.Cost(p, testBS, route.Load{DecodeBlocks: 890}, 890*testBS, 0)
	warm, _ := route.Cost(p, testBS, route.Load{DecodeBlocks: 940 + 890}, 890*testBS, 880)
	assert.Equal(t, 1780.0, cold)
	assert.Equal(t, 1840.0, warm)
	// With a lighter prefill scale the warm worker wins: the knob the
	// dynamo policy exposes.
	p.PrefillLoadScale = 0
	cold, _ = route.Cost(p, testBS, route.Load{DecodeBlocks: 890}, 890*testBS, 0)
	warm, _ = route.Cost(p, testBS, route.Load{DecodeBlocks: 940 + 890}, 890*testBS, 880)
	assert.Less(t, cold, warm, "scale 0 is decode blocks alone")
}

// Dynamo with its knobs: a full credit for a cached prompt sends it where
// it is cached, though that worker is busier; a zero credit ignores the
// cache (load only). Worker 2 holds the 40-block prompt and runs a
// 2-block request still in prefill:
//
//	credit 1: worker 2 = (8+160)/4 - 40 + (2+40) = 44; worker 1 = 40 + 40 = 80
//	credit 0: worker 2 = (8+160)/4 + (2+40) = 84;      worker 1 = 80
func TestDynamoKnobs(t *testing.T) {
	for _, tc := range []struct {
		credit float64
		want   int
		cost   float64
	}{{1, 1, 44}, {0, 0, 80}} {
		f := newFleet(t, 2)
		prompt := tokens(0, 40*testBS)
		f.store(2, prompt)
		env := f.env(1)
		env.Dynamo = route.Params{OverlapScoreCredit: tc.credit, PrefillLoadScale: 1}
		p, err := New(Dynamo, env)
		require.NoError(t, err)
		_, err = p.Pick(f.query("busy", tokens(5000, 2*testBS)), rowsOf(2))
		require.NoError(t, err)
		f.add(1)
		i, err := p.Pick(f.query("q", prompt), rowsOf(1, 2))
		require.NoError(t, err)
		assert.Equal(t, tc.want, i, "credit %v", tc.credit)
	}
}

// The router-backed policies choose among the rows they are given: the
// proxy leaves out workers without a free slot, and the demo saw 503s
// (no_worker) when Dynamo's cost chose the warm worker that was left out.
func TestRouterPoliciesChooseAmongTheRowsGiven(t *testing.T) {
	for _, name := range []string{Dynamo, KVRouter} {
		t.Run(name, func(t *testing.T) {
			f := newFleet(t, 1, 2, 3)
			env := f.env(1)
			env.Dynamo = route.DefaultParams()
			p, err := New(name, env)
			require.NoError(t, err)
			prompt := tokens(0, 64*testBS)
			f.store(2, prompt) // worker 2 holds it all: every cost prefers it
			i, err := p.Pick(f.query("q", prompt), rowsOf(1, 3))
			require.NoError(t, err, "worker 2 is not a row; the choice must be one that is")
			assert.Contains(t, []int{0, 1}, i)
			rt := p.(interface{ Router() *route.Router }).Router()
			for _, w := range rt.Stats().Workers {
				assert.NotEqual(t, uint64(2), w.Worker.ID, "no load recorded on the worker left out")
			}
		})
	}
}
