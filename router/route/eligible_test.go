package route

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Eligible narrows the candidates: the best overlap outside it is not
// taken, and an empty set has no candidate.
func TestRouteEligibleNarrowsTheCandidates(t *testing.T) {
	f := newFixture(t, 4, Options{})
	prompt := tokens(1, 8*bs)
	f.cache(3, prompt, 8) // worker 3 holds the whole prompt
	for _, c := range []struct {
		name    string
		allowed map[uint64]bool
		want    []uint64 // acceptable picks; nil: ErrNoCandidates
	}{
		{"all: the cached worker", nil, []uint64{3}},
		{"the cached worker excluded", map[uint64]bool{0: true, 1: true}, []uint64{0, 1}},
		{"only the cached worker", map[uint64]bool{3: true}, []uint64{3}},
		{"none", map[uint64]bool{}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := Request{Model: "m", TokenIDs: prompt}
			if c.allowed != nil {
				req.Eligible = func(id uint64) bool { return c.allowed[id] }
			}
			d, err := f.r.Route(req)
			if c.want == nil {
				require.ErrorIs(t, err, ErrNoCandidates)
				return
			}
			require.NoError(t, err)
			f.r.Free(d.RequestID)
			assert.Contains(t, c.want, d.WorkerID)
			for _, cand := range d.Candidates {
				assert.True(t, c.allowed == nil || c.allowed[cand.WorkerID], "candidate %d outside the set", cand.WorkerID)
			}
		})
	}
}
