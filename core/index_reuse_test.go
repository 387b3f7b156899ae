package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each case is a stream of one worker (w1) and the scores Dynamo 1.6.1's
// RadixTree gives afterwards (dynamo.llm, found with its wheel): a block
// hash repeated within a store or reused for another block is applied,
// the name moves to the new block and the worker keeps the old block
// unnamed (issue 10, items 12 and 16). kvhash used to reject the first
// whole, and for the second made the worker leave the old block, which
// cut off everything below it while still counting it in tree sizes.
func TestReusedNamesMatchDynamo(t *testing.T) {
	type step struct {
		remove []uint64 // a remove when set, else a store
		parent *uint64
		blocks []StoredBlock
	}
	tests := []struct {
		name      string
		steps     []step
		scores    map[string]map[Worker]uint32 // by query
		reused    uint64                       // name_reused violations
		treeSize  uint64
		nodes     uint64
		dumpRoute bool
	}{
		{"two equal hashes in one store", []step{{blocks: blocksOf(5, 1, 5, 2)}},
			map[string]map[Worker]uint32{"1": {w1: 1}, "1,2": {w1: 2}, "2": {}}, 1, 2, 2, true},
		{"A B A in one store", []step{{blocks: blocksOf(5, 1, 6, 2, 5, 3)}},
			map[string]map[Worker]uint32{"1": {w1: 1}, "1,2": {w1: 2}, "1,2,3": {w1: 3}, "3": {}}, 1, 3, 3, true},
		{"A B A, then remove A: the named (last) one goes", []step{{blocks: blocksOf(5, 1, 6, 2, 5, 3)}, {remove: []uint64{5}}},
			map[string]map[Worker]uint32{"1": {w1: 1}, "1,2": {w1: 2}, "1,2,3": {w1: 2}}, 1, 2, 2, true},
		{"equal hashes, equal content", []step{{blocks: blocksOf(5, 1, 5, 1)}},
			map[string]map[Worker]uint32{"1": {w1: 1}, "1,1": {w1: 2}}, 1, 2, 2, true},
		{"repeated hash, then a child of it", []step{{blocks: blocksOf(5, 1, 5, 2)}, {parent: u64(5), blocks: blocksOf(7, 3)}},
			map[string]map[Worker]uint32{"1,2,3": {w1: 3}, "1,3": {w1: 1}}, 1, 3, 3, true},
		{"a hash reused for other content", []step{{blocks: blocksOf(5, 1)}, {blocks: blocksOf(5, 2)}},
			map[string]map[Worker]uint32{"1": {w1: 1}, "2": {w1: 1}}, 1, 2, 2, true},
		{"reused, then removed", []step{{blocks: blocksOf(5, 1)}, {blocks: blocksOf(5, 2)}, {remove: []uint64{5}}},
			map[string]map[Worker]uint32{"1": {w1: 1}, "2": {}}, 1, 1, 1, true},
		{"A, B under A, A under B (same content)", []step{{blocks: blocksOf(5, 1)}, {parent: u64(5), blocks: blocksOf(6, 2)}, {parent: u64(6), blocks: blocksOf(5, 1)}},
			map[string]map[Worker]uint32{"1": {w1: 1}, "1,2": {w1: 2}, "1,2,1": {w1: 3}, "1,2,1,2": {w1: 3}}, 1, 3, 3, true},
		{"A, B under A, A under B (new content)", []step{{blocks: blocksOf(5, 1)}, {parent: u64(5), blocks: blocksOf(6, 2)}, {parent: u64(6), blocks: blocksOf(5, 3)}},
			map[string]map[Worker]uint32{"1,2,3": {w1: 3}, "1,2,3,2": {w1: 3}}, 1, 3, 3, true},
		{"a reused name stored back where it was", []step{{blocks: blocksOf(5, 1)}, {blocks: blocksOf(5, 2)}, {blocks: blocksOf(5, 1)}},
			map[string]map[Worker]uint32{"1": {w1: 1}, "2": {w1: 1}}, 2, 2, 2, true},
	}
	parseQuery := func(s string) []uint64 {
		var q []uint64
		var v uint64
		for i := 0; i <= len(s); i++ {
			if i == len(s) || s[i] == ',' {
				q = append(q, v)
				v = 0
				continue
			}
			v = 10*v + uint64(s[i]-'0')
		}
		return q
	}
	for _, tt := range tests {
		for _, mode := range []Mode{ModeWarn, ModeEnforce} {
			t.Run(tt.name+"/"+mode.String(), func(t *testing.T) {
				x := NewIndex(IndexOptions{Mode: mode})
				var reusedErrs int
				for i, s := range tt.steps {
					var err error
					if s.remove != nil {
						err = x.ApplyRemoved(w1, uint64(i), s.remove)
					} else {
						err = x.ApplyStored(w1, uint64(i), s.parent, s.blocks)
					}
					require.NotErrorIs(t, err, ErrEventRejected, "step %d is applied", i)
					for _, se := range stabilityErrors(t, err) {
						require.Equal(t, ModeEnforce, mode, "warn mode returns no error for %v", se.Kind)
						if se.Kind == ViolationNameReused {
							reusedErrs++
						}
					}
				}
				require.NoError(t, checkInvariants(x))
				for q, want := range tt.scores {
					assert.Equal(t, want, scoresOf(x, parseQuery(q), false), "query %s", q)
					assert.Equal(t, want, scoresOf(x, parseQuery(q), true), "query %s, early exit", q)
				}
				s := x.Stats()
				assert.Equal(t, tt.reused, s.Violations[ViolationNameReused])
				assert.Equal(t, tt.nodes, s.Nodes)
				require.Len(t, s.Workers, 1)
				assert.Equal(t, tt.treeSize, s.Workers[0].Blocks, "tree size: every block held, named or not")
				if mode == ModeEnforce {
					assert.Equal(t, int(tt.reused), reusedErrs)
					assert.True(t, s.Workers[0].Unstable)
				}

				// The dump rebuilds the unnamed blocks too.
				y := replay(t, x.Dump())
				require.NoError(t, checkInvariants(y))
				assert.Equal(t, x.Stats().Nodes, y.Stats().Nodes)
				assert.Equal(t, x.Stats().Workers[0].Blocks, y.Stats().Workers[0].Blocks)
				for q := range tt.scores {
					assert.Equal(t, x.AppendMatches(nil, parseQuery(q), false), y.AppendMatches(nil, parseQuery(q), false), "replayed: query %s", q)
				}

				// A clear drops unnamed blocks as well.
				x.ClearWorker(w1)
				assert.Zero(t, x.Stats().Nodes)
				assert.Zero(t, x.Stats().Workers[0].Blocks)
				require.NoError(t, checkInvariants(x))
			})
		}
	}
}

// Another worker sharing a block the first keeps unnamed: both are
// counted, as in Dynamo.
func TestReusedNameSharedBlock(t *testing.T) {
	x := NewIndex(IndexOptions{Mode: ModeWarn})
	require.NoError(t, x.ApplyStored(w1, 1, nil, blocksOf(5, 1, 5, 2)))
	require.NoError(t, x.ApplyStored(w2, 1, nil, blocksOf(5, 1)))
	assert.Equal(t, map[Worker]uint32{w1: 2, w2: 1}, scoresOf(x, []uint64{1, 2}, false))
	// w2's name for the shared block is its own; removing it leaves w1 on it.
	require.NoError(t, x.ApplyRemoved(w2, 2, []uint64{5}))
	assert.Equal(t, map[Worker]uint32{w1: 2}, scoresOf(x, []uint64{1, 2}, false))
	// w1 names the unnamed block again: it holds both, under 5 and 9.
	require.NoError(t, x.ApplyStored(w1, 3, nil, blocksOf(9, 1)))
	assert.Equal(t, uint64(2), x.Stats().Workers[0].Blocks)
	require.NoError(t, x.ApplyRemoved(w1, 4, []uint64{9}))
	assert.Equal(t, map[Worker]uint32{}, scoresOf(x, []uint64{1, 2}, false), "block 1 left; block 2 is detached")
	assert.Equal(t, uint64(1), x.Stats().Workers[0].Blocks, "a detached block is still held and counted")
	require.NoError(t, checkInvariants(x))
}
