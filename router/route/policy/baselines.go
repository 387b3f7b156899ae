package policy

import "math/rand/v2"

// The blind baselines' names.
const (
	RoundRobin  = "round_robin"
	Random      = "random"
	LeastLoaded = "least_loaded"
)

func init() {
	Register(RoundRobin, func(Env) (Policy, error) { return &roundRobin{}, nil })
	Register(Random, func(env Env) (Policy, error) { return &random{rng: newRNG(env.Seed)}, nil })
	Register(LeastLoaded, func(env Env) (Policy, error) { return &leastLoaded{rng: newRNG(env.Seed)}, nil })
}

// roundRobin takes the workers in turn.
type roundRobin struct{ next int }

func (*roundRobin) Name() string { return RoundRobin }
func (p *roundRobin) Pick(_ *Query, rows []Row) (int, error) {
	i := p.next % len(rows)
	p.next = i + 1
	return i, nil
}

// random draws a worker uniformly.
type random struct{ rng *rand.Rand }

func (*random) Name() string { return Random }
func (p *random) Pick(_ *Query, rows []Row) (int, error) {
	return p.rng.IntN(len(rows)), nil
}

// leastLoaded takes the worker with the fewest in-flight tokens by the
// router's own count (prompts plus tokens generated so far), ties at
// random.
type leastLoaded struct{ rng *rand.Rand }

func (*leastLoaded) Name() string { return LeastLoaded }
func (p *leastLoaded) Pick(_ *Query, rows []Row) (int, error) {
	return argmaxRandom(p.rng, len(rows), func(i int) float64 { return -float64(rows[i].Tokens) }), nil
}
