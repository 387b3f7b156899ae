package indexerbench

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func result(bps float64, cpu time.Duration, rss int64, p99, maxQ time.Duration) Result {
	return Result{BlocksPerSec: bps, CPUPerBlock: cpu, PeakRSS: rss, Query: QueryStats{P99: p99, Max: maxQ}}
}

// The targets read medians over the runs: one bad run of three does not
// decide, two do; ingestion and CPU come from bursts, p99 from paced runs.
func TestTargetsJudgeMediansOfTheRightCases(t *testing.T) {
	good := result(2e6, 400*time.Nanosecond, 100<<20, time.Millisecond, 2*time.Millisecond)
	slow := result(1e6, 400*time.Nanosecond, 100<<20, time.Millisecond, 2*time.Millisecond)
	dyn := result(1e6, time.Microsecond, 200<<20, 2*time.Millisecond, time.Second)
	cases := []struct {
		name   string
		burst  []Result
		paced  []Result
		notMet []string
	}{
		{"all met", []Result{good, good, good}, []Result{good, good, good}, nil},
		{"one slow burst run", []Result{good, slow, good}, []Result{good, good, good}, nil},
		{"two slow burst runs", []Result{slow, slow, good}, []Result{good, good, good}, []string{"ingest"}},
		{"slow paced runs do not count as ingestion", []Result{good, good, good}, []Result{slow, slow, slow}, nil},
		{"a stalled burst", []Result{
			result(2e6, 400*time.Nanosecond, 100<<20, time.Millisecond, 50*time.Millisecond),
			result(2e6, 400*time.Nanosecond, 100<<20, time.Millisecond, 50*time.Millisecond), good},
			[]Result{good, good, good}, []string{"longest query"}},
		{"paced p99 above Dynamo's", []Result{good, good, good}, []Result{
			result(5e5, time.Microsecond, 100<<20, 3*time.Millisecond, 4*time.Millisecond),
			result(5e5, time.Microsecond, 100<<20, 3*time.Millisecond, 4*time.Millisecond), good},
			[]string{"query p99"}},
		{"more memory", []Result{result(2e6, 400*time.Nanosecond, 300<<20, time.Millisecond, 2*time.Millisecond),
			result(2e6, 400*time.Nanosecond, 300<<20, time.Millisecond, 2*time.Millisecond), good},
			[]Result{good, good, good}, []string{"peak RSS"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cells := []Cell{
				{Engines: 4, Blocks: 2e6, Rate: 0, KVRouter: tc.burst, Dynamo: []Result{dyn, dyn, dyn}},
				{Engines: 4, Blocks: 2e6, Rate: 5e5, KVRouter: tc.paced, Dynamo: []Result{dyn, dyn, dyn}},
			}
			lines := Targets(cells)
			require.Len(t, lines, 5)
			var notMet []string
			for _, l := range lines {
				if strings.Contains(l, "NOT met") {
					notMet = append(notMet, l)
				}
			}
			require.Len(t, notMet, len(tc.notMet), "%v", lines)
			for i, want := range tc.notMet {
				assert.Contains(t, notMet[i], want)
			}
			var table strings.Builder
			require.NoError(t, WriteTable(&table, cells, 200))
			assert.Equal(t, 4, strings.Count(table.String(), "\n"), table.String())
		})
	}
}

// The longest burst query's line names the floor server's longest answer
// in the same runs, when there was one; the table has its column.
func TestTheLongestQueryIsShownBesideTheFloor(t *testing.T) {
	withFloor := func(r Result, floor time.Duration) Result { r.Floor.Max = floor; return r }
	k := withFloor(result(2e6, 400*time.Nanosecond, 100<<20, time.Millisecond, 12*time.Millisecond), 7*time.Millisecond)
	d := withFloor(result(1e6, time.Microsecond, 200<<20, 2*time.Millisecond, time.Second), 9*time.Millisecond)
	cells := []Cell{{Engines: 32, Blocks: 2e6, KVRouter: []Result{k, k, k}, Dynamo: []Result{d, d, d}}}
	var longest string
	for _, l := range Targets(cells) {
		if strings.HasPrefix(l, "longest query") {
			longest = l
		}
	}
	assert.Equal(t, "longest query under a burst < 5 ms: NOT met (median of the runs' max, worst case 12.0 ms; the floor server's in the same runs 7.0 ms)", longest)
	var table strings.Builder
	require.NoError(t, WriteTable(&table, cells, 200))
	assert.Contains(t, table.String(), "| floor max ms |")
	assert.Contains(t, table.String(), "| 12.0 / 1000.0 | 7.0 / 9.0 |")

	cells[0].KVRouter = []Result{result(2e6, 400*time.Nanosecond, 100<<20, time.Millisecond, 12*time.Millisecond)}
	for _, l := range Targets(cells) {
		assert.NotContains(t, l, "floor", "no floor asked, none named")
	}
}

func TestKeepSlowestKeepsTheSlowestInOrder(t *testing.T) {
	var slow []SlowQuery
	for i, took := range []int{3, 9, 1, 7, 5, 8, 2, 6, 4} {
		slow = keepSlowest(slow, SlowQuery{At: time.Duration(i) * time.Second, Took: time.Duration(took) * time.Millisecond})
	}
	var got []time.Duration
	for _, q := range slow {
		got = append(got, q.Took)
	}
	assert.Equal(t, []time.Duration{9 * time.Millisecond, 8 * time.Millisecond, 7 * time.Millisecond, 6 * time.Millisecond, 5 * time.Millisecond}, got)
	assert.Equal(t, time.Second, slow[0].At)
}
