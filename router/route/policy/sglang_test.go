package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func withRequests(rows []Row, loads ...int) []Row {
	for i := range rows {
		rows[i].Requests = loads[i]
	}
	return rows
}

// SGLang's cache_aware by hand (block size 4; a 10-block, 40-token prompt).
func TestSGLangCacheAware(t *testing.T) {
	prompt := tokens(0, 10*testBS)
	// teach routes prompt's first n blocks to worker 1 (the only one
	// balanced and matching: the least loaded, first of equals).
	teach := func(t *testing.T, p Policy, f *fleet, n int) {
		i, err := p.Pick(f.query("t", prompt[:n*testBS]), withRequests(rowsOf(1, 2), 0, 0))
		require.NoError(t, err)
		require.Equal(t, 0, i, "ties go to the first worker")
	}
	tests := []struct {
		name   string
		taught int   // blocks of the prompt worker 1 was sent
		loads  []int // in-flight requests of workers 1, 2
		want   int
	}{
		{"match above 0.3 goes to the match", 4, []int{40, 0}, 0},
		{"match of exactly 0.3 is not enough: least loaded", 3, []int{40, 0}, 1},
		{"imbalanced (100-30 > 64, 100 > 45): least loaded despite the match", 10, []int{100, 30}, 1},
		{"difference of 60 is balanced: the match", 10, []int{100, 40}, 0},
		{"70 against 0 is imbalanced", 10, []int{70, 0}, 1},
		{"200 against 135: over 64 apart but not 1.5x: the match", 10, []int{200, 135}, 0},
		{"no match: least loaded", 0, []int{3, 2}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFleet(t, 1, 2)
			p, err := New(SGLang, f.env(1))
			require.NoError(t, err)
			if tc.taught > 0 {
				teach(t, p, f, tc.taught)
			}
			i, err := p.Pick(f.query("q", prompt), withRequests(rowsOf(1, 2), tc.loads...))
			require.NoError(t, err)
			assert.Equal(t, tc.want, i)
		})
	}
}

// The doc comment says a low match goes to the smallest tree; the code
// takes the least loaded. Worker 1 has the smaller tree (nothing) but
// more requests; worker 2 the bigger tree and fewer: worker 2.
func TestSGLangLowMatchIsLeastLoadedNotSmallestTree(t *testing.T) {
	f := newFleet(t, 1, 2)
	p, err := New(SGLang, f.env(1))
	require.NoError(t, err)
	i, err := p.Pick(f.query("big", tokens(5000, 50*testBS)), withRequests(rowsOf(1, 2), 1, 0))
	require.NoError(t, err)
	require.Equal(t, 1, i)
	i, err = p.Pick(f.query("q", tokens(0, 10*testBS)), withRequests(rowsOf(1, 2), 3, 2))
	require.NoError(t, err)
	assert.Equal(t, 1, i)
}

// The chosen worker learns the prompt even when imbalance chose it.
func TestSGLangInsertsUnderTheChosenWorker(t *testing.T) {
	f := newFleet(t, 1, 2)
	p, err := New(SGLang, f.env(1))
	require.NoError(t, err)
	prompt := tokens(0, 10*testBS)
	i, err := p.Pick(f.query("a", prompt), withRequests(rowsOf(1, 2), 100, 0))
	require.NoError(t, err)
	require.Equal(t, 1, i)
	i, err = p.Pick(f.query("b", prompt), withRequests(rowsOf(1, 2), 0, 20))
	require.NoError(t, err)
	assert.Equal(t, 1, i, "the match, though worker 1 is less loaded")
}
