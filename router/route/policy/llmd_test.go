package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
)

func withMetrics(rows []Row, waiting []int, kv []float64) []Row {
	for i := range rows {
		rows[i].Metrics = Metrics{Waiting: waiting[i], KVUsage: kv[i]}
	}
	return rows
}

// llm-d's default profile, 2*Q + 2*K + 3*X, by hand:
//
//	waiting 0, 4, 2 -> Q 1, 0, 0.5; KV use .5, .1, .2 -> K .5, .9, .8; X 0
//	scores 3, 1.8, 2.6 -> pod 0
//
// and the prefix index learned that choice (not from KV events): the same
// prompt again, pod 0 now the busiest (waiting 10, 0, 0 -> Q 0, 1, 1; K 1
// each) scores 0 + 2 + 3 = 5 against 4: pod 0 again.
func TestLLMDDefaultProfile(t *testing.T) {
	f := newFleet(t, 1, 2, 3)
	p, err := New(LLMD, f.env(1))
	require.NoError(t, err)
	q := f.query("a", tokens(0, 10*testBS))
	i, err := p.Pick(q, withMetrics(rowsOf(1, 2, 3), []int{0, 4, 2}, []float64{.5, .1, .2}))
	require.NoError(t, err)
	assert.Equal(t, 0, i)

	i, err = p.Pick(f.query("b", tokens(0, 10*testBS)), withMetrics(rowsOf(1, 2, 3), []int{10, 0, 0}, []float64{0, 0, 0}))
	require.NoError(t, err)
	assert.Equal(t, 0, i, "X = 1 on the pod the index learned")

	// Half the prompt matches: X = 0.5 -> 1.5 does not beat Q's 2.
	half := append(tokens(0, 5*testBS), tokens(900, 5*testBS)...)
	i, err = p.Pick(f.query("c", half), withMetrics(rowsOf(1, 2, 3), []int{10, 0, 10}, []float64{0, 0, 0}))
	require.NoError(t, err)
	assert.Equal(t, 1, i)
}

// Every pod waiting equally scores Q = 1 (not 0/0).
func TestLLMDQueueAllEqual(t *testing.T) {
	q := queueScores(withMetrics(rowsOf(1, 2), []int{3, 3}, []float64{0, 0}))
	assert.Equal(t, 1.0, q(0))
	assert.Equal(t, 1.0, q(1))
}

// The approximate index's walk stops at the first block no pod holds, and
// every pod counts every block it holds until then, consecutive or not
// (a pod that lost a middle block to its LRU keeps counting).
func TestLLMDApproxIndexQuirks(t *testing.T) {
	a, b := core.Worker{ID: 1}, core.Worker{ID: 2}
	x := newApproxIndex(10)
	x.add([]uint64{10}, a)
	x.add([]uint64{11}, b)
	x.add([]uint64{12}, a)
	rows := rowsOf(1, 2)
	assert.Equal(t, []int{2, 1}, x.match(nil, []uint64{10, 11, 12, 13}, rows))
	assert.Equal(t, []int{0, 0}, x.match(nil, []uint64{99, 10}, rows), "the first block unmatched: nothing counts")

	// Capacity 2: a third block evicts the least recent.
	small := newApproxIndex(2)
	small.add([]uint64{1, 2, 3}, a)
	assert.Equal(t, []int{0, 0}, small.match(nil, []uint64{1, 2, 3}, rows))
	assert.Equal(t, []int{2, 0}, small.match(nil, []uint64{2, 3}, rows))
}

// At most 256 blocks of a prompt are matched: a 300-block prompt fully
// held scores X = 1.
func TestLLMDPrefixCapsAt256Blocks(t *testing.T) {
	f := newFleet(t, 1, 2)
	p, err := New(LLMD, f.env(1))
	require.NoError(t, err)
	prompt := tokens(0, 300*testBS)
	_, err = p.Pick(f.query("a", prompt), withMetrics(rowsOf(1, 2), []int{0, 5}, []float64{0, 0}))
	require.NoError(t, err)
	i, err := p.Pick(f.query("b", prompt), withMetrics(rowsOf(1, 2), []int{5, 0}, []float64{1, 0.55}))
	require.NoError(t, err)
	// The learned prompt again. Pod 0: 0 + 0 + 3*1 = 3; pod 1: 2 + 0.9 = 2.9. Had X been
	// 256/300, pod 0 would score 2.56 and lose.
	assert.Equal(t, 0, i)
}

// The precise profile, 2*X' + K + Q, X' min-max over the matching pods:
// overlaps 0, 3, 10, 5 -> X' 0, 0, 1, 2/7; K and Q equal -> pod 2.
func TestLLMDPrecise(t *testing.T) {
	rows := withMetrics(rowsOf(1, 2, 3, 4), []int{0, 0, 0, 0}, []float64{0, 0, 0, 0})
	for i, o := range []uint32{0, 3, 10, 5} {
		rows[i].Overlap = o
	}
	x := preciseScores(rows)
	assert.Equal(t, []float64{0, 0, 1, 2.0 / 7}, []float64{x(0), x(1), x(2), x(3)})
	p, err := New(LLMDPrecise, Env{Seed: 1})
	require.NoError(t, err)
	assert.True(t, p.(OverlapReader).ReadsOverlap())
	i, err := p.Pick(&Query{}, rows)
	require.NoError(t, err)
	assert.Equal(t, 2, i)
}

// A single matching pod scores X' = 1 however short its match: one block
// matched on a pod 90 % full (2 + 0.1 + 1 = 3.1) beats an empty pod with
// no match (0 + 1 + 1 = 2). Pods matching equally all score 1.
func TestLLMDPreciseSingleMatchScoresOne(t *testing.T) {
	rows := withMetrics(rowsOf(1, 2), []int{0, 0}, []float64{.9, 0})
	rows[0].Overlap = 1
	p, err := New(LLMDPrecise, Env{Seed: 1})
	require.NoError(t, err)
	i, err := p.Pick(&Query{}, rows)
	require.NoError(t, err)
	assert.Equal(t, 0, i)
	rows[1].Overlap = 1
	x := preciseScores(rows)
	assert.Equal(t, []float64{1, 1}, []float64{x(0), x(1)})
}

// The precise profile reads the production index's overlaps (KV events).
func TestLLMDPreciseReadsKVEvents(t *testing.T) {
	f := newFleet(t, 1, 2)
	prompt := tokens(0, 8*testBS)
	f.store(2, prompt[:2*testBS])
	p, err := New(LLMDPrecise, f.env(1))
	require.NoError(t, err)
	rows := withMetrics(rowsOf(1, 2), []int{0, 0}, []float64{0, 0})
	fillOverlaps(t, f, prompt, rows)
	assert.Equal(t, uint32(2), rows[1].Overlap)
	i, err := p.Pick(f.query("q", prompt), rows)
	require.NoError(t, err)
	assert.Equal(t, 1, i)
}

// Past 64 pods the index still matches every pod (the bit masks cover the
// first 64; the rest look their own LRUs up).
func TestLLMDApproxIndexBeyond64Pods(t *testing.T) {
	x := newApproxIndex(10)
	rows := make([]Row, 70)
	for i := range rows {
		rows[i].Worker = core.Worker{ID: uint64(i + 1)}
		x.add([]uint64{uint64(i)}, rows[i].Worker) // pod i holds block i
	}
	x.add([]uint64{5, 1000}, rows[66].Worker)
	got := x.match(nil, []uint64{5, 1000, 9999}, rows)
	want := make([]int, 70)
	want[5], want[66] = 1, 2
	assert.Equal(t, want, got)
	assert.Equal(t, []int(append(make([]int, 69), 1)), x.match(nil, []uint64{69}, rows), "the 70th pod's own block")
}
