package demo_test

import (
	"math/rand/v2"

	"github.com/kvhash/kvhash/router/demo"
)

// conversationTrace is a Mooncake-format trace shaped as the issue's:
// every request starts with one shared 512-token block (a system
// prompt); conversations' turns extend their earlier turns (the last,
// partial block rewritten); Poisson arrivals, 20 a second.
func conversationTrace(n int, seed uint64) []demo.Request {
	rng := rand.New(rand.NewPCG(seed, 7))
	type conv struct {
		ids  []uint64
		last bool // the last block is partial
	}
	next := uint64(1) // 0: the system prompt
	var live []*conv
	out := make([]demo.Request, 0, n)
	t := 0.0
	for range n {
		t += rng.ExpFloat64() * 50
		var c *conv
		if len(live) < 20 || rng.Float64() < 0.15 {
			c = &conv{ids: []uint64{0}}
			live = append(live, c)
		} else {
			c = live[rng.IntN(len(live))]
		}
		if c.last {
			c.ids = c.ids[:len(c.ids)-1] // its partial block, rewritten
		}
		for range 1 + rng.IntN(3) {
			c.ids = append(c.ids, next)
			next++
		}
		c.last = true
		if len(c.ids) > 24 {
			for i, o := range live {
				if o == c {
					live = append(live[:i], live[i+1:]...)
					break
				}
			}
		}
		ids := append([]uint64(nil), c.ids...)
		out = append(out, demo.Request{
			Timestamp:    float64(int64(t)),
			InputLength:  demo.TraceBlockTokens*(len(ids)-1) + 1 + rng.IntN(demo.TraceBlockTokens),
			OutputLength: 4 + rng.IntN(16),
			HashIDs:      ids,
		})
	}
	return out
}
