package core

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func u64(v uint64) *uint64 { return &v }

// blocksOf makes a store's blocks from (external, local) pairs.
func blocksOf(pairs ...uint64) []StoredBlock {
	var out []StoredBlock
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, StoredBlock{BlockHash: pairs[i], TokensHash: pairs[i+1]})
	}
	return out
}

func scoresOf(x *Index, q []uint64, earlyExit bool) map[Worker]uint32 {
	return x.FindMatches(q, earlyExit).Scores
}

var (
	w1  = Worker{ID: 1}
	w2  = Worker{ID: 2}
	w3  = Worker{ID: 3}
	w1b = Worker{ID: 1, DPRank: 1}
)

func TestStoreAndFindMatches(t *testing.T) {
	x := NewIndex(IndexOptions{Mode: ModeWarn})
	require.NoError(t, x.ApplyStored(w1, 1, nil, blocksOf(100, 10, 110, 11, 120, 12)))
	require.NoError(t, x.ApplyStored(w2, 1, nil, blocksOf(100, 10, 110, 11)))
	require.NoError(t, x.ApplyStored(w2, 2, u64(110), blocksOf(130, 13)))

	got := x.FindMatches([]uint64{10, 11, 12}, false)
	assert.Equal(t, map[Worker]uint32{w1: 3, w2: 2}, got.Scores)
	assert.Equal(t, map[Worker]uint64{w1: 3, w2: 3}, got.TreeSizes)
	assert.NotNil(t, got.Frequencies)
	assert.Empty(t, got.Frequencies)

	assert.Equal(t, map[Worker]uint32{w2: 3, w1: 2}, scoresOf(x, []uint64{10, 11, 13}, false))
	assert.Empty(t, scoresOf(x, []uint64{11, 12}, false), "matches start at the root")
	assert.Empty(t, scoresOf(x, nil, false))
	assert.Equal(t, []Match{{w1, 3, 3}, {w2, 2, 3}}, x.AppendMatches(nil, []uint64{10, 11, 12, 99}, false))
	assert.Equal(t, uint64(4), x.Stats().Nodes)
}

// earlyExit changes no score: Dynamo 1.6.1 counts the last worker left
// to its full depth (issue 10, item 15: kvhash used to stop there).
func TestEarlyExitCountsTheLastWorkerFully(t *testing.T) {
	x := NewIndex(IndexOptions{Mode: ModeWarn})
	require.NoError(t, x.ApplyStored(w1, 1, nil, blocksOf(100, 10, 110, 11, 120, 12, 130, 13, 140, 14)))
	q := []uint64{10, 11, 12, 13, 14}
	assert.Equal(t, map[Worker]uint32{w1: 5}, scoresOf(x, q, true), "one worker holding 5 blocks: Dynamo says 5")
	assert.Equal(t, map[Worker]uint32{w1: 3}, scoresOf(x, q[:3], true))
	assert.Equal(t, map[Worker]uint32{w1: 2}, scoresOf(x, []uint64{10, 11, 99, 13}, true))

	require.NoError(t, x.ApplyStored(w2, 1, nil, blocksOf(100, 10, 110, 11)))
	require.NoError(t, x.ApplyStored(w3, 1, nil, blocksOf(100, 10)))
	for _, early := range []bool{false, true} {
		assert.Equal(t, map[Worker]uint32{w1: 5, w2: 2, w3: 1}, scoresOf(x, q, early), "earlyExit %v", early)
	}
	require.NoError(t, x.ApplyRemoved(w2, 2, []uint64{100, 110}))
	assert.Equal(t, map[Worker]uint32{w1: 5, w3: 1}, scoresOf(x, q, true))
}

// With one worker left, Dynamo's early exit stops at a node with more
// than one child, scoring the depth reached (cases checked with its wheel).
func TestEarlyExitStopsAtABranchWithOneWorkerLeft(t *testing.T) {
	tests := []struct {
		name        string
		stores      func(x *Index)
		q           []uint64
		early, full map[Worker]uint32
	}{
		{"one worker, branch at the first block", func(x *Index) {
			require.NoError(t, x.ApplyStored(w1, 1, nil, blocksOf(100, 1, 101, 2)))
			require.NoError(t, x.ApplyStored(w1, 2, u64(100), blocksOf(102, 3)))
		}, []uint64{1, 2}, map[Worker]uint32{w1: 1}, map[Worker]uint32{w1: 2}},
		{"one worker, branch at the third block", func(x *Index) {
			require.NoError(t, x.ApplyStored(w1, 1, nil, blocksOf(100, 1, 101, 2, 102, 3, 103, 4)))
			require.NoError(t, x.ApplyStored(w1, 2, u64(102), blocksOf(104, 5)))
		}, []uint64{1, 2, 3, 5}, map[Worker]uint32{w1: 3}, map[Worker]uint32{w1: 4}},
		{"one worker left where the tree branches", func(x *Index) {
			require.NoError(t, x.ApplyStored(w1, 1, nil, blocksOf(100, 1, 101, 2, 103, 4)))
			require.NoError(t, x.ApplyStored(w2, 1, nil, blocksOf(100, 1)))
			require.NoError(t, x.ApplyStored(w1, 2, u64(101), blocksOf(104, 5)))
		}, []uint64{1, 2, 4}, map[Worker]uint32{w1: 2, w2: 1}, map[Worker]uint32{w1: 3, w2: 1}},
		{"two workers through a branch, then one", func(x *Index) {
			require.NoError(t, x.ApplyStored(w1, 1, nil, blocksOf(100, 1, 101, 2, 102, 3, 103, 4)))
			require.NoError(t, x.ApplyStored(w2, 1, nil, blocksOf(100, 1, 101, 2)))
			require.NoError(t, x.ApplyStored(w1, 2, u64(102), blocksOf(104, 5)))
		}, []uint64{1, 2, 3, 4}, map[Worker]uint32{w1: 3, w2: 2}, map[Worker]uint32{w1: 4, w2: 2}},
		{"a store under B diverging at C: Dynamo's replayed dump says 3", func(x *Index) {
			require.NoError(t, x.ApplyStored(w1, 1, nil, blocksOf(100, 1, 101, 2, 102, 3, 103, 4)))
			require.NoError(t, x.ApplyStored(w1, 2, u64(101), blocksOf(102, 3, 105, 6)))
		}, []uint64{1, 2, 3, 4}, map[Worker]uint32{w1: 3}, map[Worker]uint32{w1: 4}},
		{"several workers at a branch go on", func(x *Index) {
			require.NoError(t, x.ApplyStored(w1, 1, nil, blocksOf(100, 1, 101, 2)))
			require.NoError(t, x.ApplyStored(w2, 1, nil, blocksOf(100, 1, 102, 3)))
		}, []uint64{1, 2}, map[Worker]uint32{w1: 2, w2: 1}, map[Worker]uint32{w1: 2, w2: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := NewIndex(IndexOptions{Mode: ModeWarn})
			tt.stores(x)
			assert.Equal(t, tt.early, scoresOf(x, tt.q, true), "early exit")
			assert.Equal(t, tt.full, scoresOf(x, tt.q, false), "full walk")
		})
	}
}

func TestScoresCountConsecutiveBlocksOnly(t *testing.T) {
	x := NewIndex(IndexOptions{Mode: ModeWarn})
	require.NoError(t, x.ApplyStored(w1, 1, nil, blocksOf(100, 10, 110, 11, 120, 12)))
	require.NoError(t, x.ApplyStored(w2, 1, nil, blocksOf(100, 10, 110, 11, 120, 12)))
	// w2 evicts the middle block: removal does not cascade, so it keeps
	// block 2, but its score stops before the hole.
	require.NoError(t, x.ApplyRemoved(w2, 2, []uint64{110}))
	got := x.FindMatches([]uint64{10, 11, 12}, false)
	assert.Equal(t, map[Worker]uint32{w1: 3, w2: 1}, got.Scores)
	assert.Equal(t, map[Worker]uint64{w1: 3, w2: 2}, got.TreeSizes)
}

func TestUnknownParentDropsTheWholeStore(t *testing.T) {
	for _, mode := range []Mode{ModeWarn, ModeEnforce} {
		x := NewIndex(IndexOptions{Mode: mode})
		require.NoError(t, x.ApplyStored(w1, 1, nil, blocksOf(100, 10)))
		err := x.ApplyStored(w1, 2, u64(999), blocksOf(110, 11, 120, 12))
		require.ErrorIs(t, err, ErrEventRejected)
		require.ErrorIs(t, err, ErrStability)
		var se *StabilityError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, StabilityError{Kind: ViolationParentNotFound, Worker: w1, EventID: 2, Hash: 999, Enforced: mode == ModeEnforce}, *se)
		assert.Equal(t, uint64(1), x.Stats().Nodes)
		assert.Equal(t, map[Worker]uint32{w1: 1}, scoresOf(x, []uint64{10, 11, 12}, false))
		// Another worker's hash is no parent for w1 either.
		require.NoError(t, x.ApplyStored(w2, 3, nil, blocksOf(200, 20)))
		require.ErrorIs(t, x.ApplyStored(w1, 4, u64(200), blocksOf(210, 21)), ErrEventRejected)
	}
}

func TestUnknownRemovedBlocksAreSkipped(t *testing.T) {
	x := NewIndex(IndexOptions{Mode: ModeWarn})
	require.NoError(t, x.ApplyStored(w1, 1, nil, blocksOf(100, 10, 110, 11)))
	err := x.ApplyRemoved(w1, 2, []uint64{7, 110, 8})
	require.ErrorIs(t, err, ErrEventRejected)
	require.ErrorIs(t, err, ErrStability)
	assert.Len(t, stabilityErrors(t, err), 2)
	assert.Equal(t, uint64(1), x.Stats().Workers[0].Blocks, "the known block was removed")
	assert.Equal(t, uint64(2), x.Stats().Violations[ViolationBlockNotFound])
}

func TestEmptyNodeDropsItsChildren(t *testing.T) {
	x := NewIndex(IndexOptions{Mode: ModeWarn})
	require.NoError(t, x.ApplyStored(w1, 1, nil, blocksOf(100, 10, 110, 11)))
	require.NoError(t, x.ApplyRemoved(w1, 2, []uint64{100}))
	// Block 0 had no other holder: it is gone, and block 1 is detached.
	assert.Empty(t, scoresOf(x, []uint64{10, 11}, false))
	assert.Equal(t, uint64(1), x.Stats().Nodes)
	// Storing block 0 again does not bring block 1 back ...
	require.NoError(t, x.ApplyStored(w2, 3, nil, blocksOf(100, 10)))
	assert.Equal(t, map[Worker]uint32{w2: 1}, scoresOf(x, []uint64{10, 11}, false))
	// ... until w1, which still holds it, stores it under block 0 again:
	// the detached node is re-attached (a duplicate store of w1).
	require.NoError(t, x.ApplyStored(w1, 4, nil, blocksOf(100, 10)))
	require.NoError(t, x.ApplyStored(w1, 5, u64(100), blocksOf(110, 11)))
	assert.Equal(t, map[Worker]uint32{w1: 2, w2: 1}, scoresOf(x, []uint64{10, 11}, false))
	assert.Equal(t, uint64(1), x.Stats().Violations[ViolationDuplicateStore])
	assert.Equal(t, uint64(2), x.Stats().Nodes)
	require.NoError(t, checkInvariants(x))
}

func TestReattachingNeverClosesACycle(t *testing.T) {
	m := newModel()
	x := NewIndex(IndexOptions{Mode: ModeWarn})
	apply := func(w Worker, parent *uint64, blocks []StoredBlock) {
		_ = x.ApplyStored(w, 0, parent, blocks)
		m.stored(w, parent, blocks)
	}
	apply(w1, nil, blocksOf(100, 10, 110, 11, 120, 12))
	require.NoError(t, x.ApplyRemoved(w1, 1, []uint64{100}))
	m.removed(w1, []uint64{100})
	// 110 is now a detached top with child 120. Storing 110 under 120
	// would make 110 its own ancestor: a new node is made instead, and
	// the name 110 moves to it.
	apply(w1, u64(120), blocksOf(110, 13))
	require.NoError(t, checkInvariants(x))
	requireSameStats(t, m.stats(), x.Stats())
	y := replay(t, x.Dump())
	require.NoError(t, checkInvariants(y))
	assert.Equal(t, x.Stats().Nodes, y.Stats().Nodes)
	assert.Equal(t, x.Stats().Workers, y.Stats().Workers)
}

func TestHashMismatchAndDuplicateStore(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	x := NewIndex(IndexOptions{Mode: ModeWarn, Logger: logger})
	require.NoError(t, x.ApplyStored(w1, 1, nil, blocksOf(100, 10, 110, 11)))
	// w2's engine names the same content differently: counted, logged,
	// not an error in warn mode, and the node is shared.
	require.NoError(t, x.ApplyStored(w2, 7, nil, blocksOf(200, 10, 210, 11)))
	assert.Equal(t, map[Worker]uint32{w1: 2, w2: 2}, scoresOf(x, []uint64{10, 11}, false))
	require.NoError(t, x.ApplyStored(w1, 8, nil, blocksOf(100, 10)))
	s := x.Stats()
	assert.Equal(t, uint64(2), s.Violations[ViolationHashMismatch])
	assert.Equal(t, uint64(1), s.Violations[ViolationDuplicateStore])
	assert.False(t, s.Workers[1].Unstable)

	lines := bytes.Split(bytes.TrimSpace(logs.Bytes()), []byte("\n"))
	require.Len(t, lines, 3)
	var rec map[string]any
	require.NoError(t, json.Unmarshal(lines[0], &rec))
	assert.Equal(t, "WARN", rec["level"])
	assert.Equal(t, "hash_mismatch", rec["kind"])
	assert.EqualValues(t, 2, rec["worker_id"])
	assert.EqualValues(t, 0, rec["dp_rank"])
	assert.EqualValues(t, 7, rec["event_id"])
	assert.EqualValues(t, 200, rec["hash"])
	assert.EqualValues(t, 100, rec["indexed_hash"])

	// w2 removes by its own names.
	require.NoError(t, x.ApplyRemoved(w2, 9, []uint64{210, 200}))
	assert.Equal(t, map[Worker]uint32{w1: 2}, scoresOf(x, []uint64{10, 11}, false))
}

// One event naming a million unknown blocks is counted in full, but
// logged and returned one by one only up to a bound, the first of each
// kind always among them: a crafted or huge message cannot turn into
// gigabytes of log lines and errors.
func TestAnEventsViolationsAreBoundedInLogAndError(t *testing.T) {
	var logs bytes.Buffer
	x := NewIndex(IndexOptions{Mode: ModeEnforce, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	const n = 1_000_000
	unknown := make([]uint64, n)
	for i := range unknown {
		unknown[i] = uint64(5_000_000 + i)
	}
	err := x.ApplyRemoved(w1, 1, unknown)
	require.ErrorIs(t, err, ErrEventRejected)
	assert.Len(t, stabilityErrors(t, err), maxRecordedViolations)
	assert.Less(t, len(err.Error()), 4096, "the error's text is bounded")
	assert.Equal(t, uint64(n), x.Stats().Violations[ViolationBlockNotFound], "every one counted")
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	assert.Len(t, lines, maxRecordedViolations+1, "the recorded ones, then one line with the rest's count")
	assert.Contains(t, lines[len(lines)-1], fmt.Sprintf(`"block_not_found":%d`, n-maxRecordedViolations))

	// A kind first met past the bound is still among the errors: callers
	// decide by the kinds present.
	var chain []StoredBlock
	for i := range uint64(20) {
		chain = append(chain, StoredBlock{BlockHash: 1000 + i, TokensHash: i})
	}
	require.NoError(t, x.ApplyStored(w2, 2, nil, chain))
	again := append(slices.Clone(chain), StoredBlock{BlockHash: 1000, TokensHash: 999}) // 20 duplicates, then a reused name
	err = x.ApplyStored(w2, 3, nil, again)
	got := kinds(stabilityErrors(t, err))
	assert.Len(t, got, maxRecordedViolations+1)
	assert.Equal(t, ViolationNameReused, got[len(got)-1])
	assert.Equal(t, uint64(20), x.Stats().Workers[1].Violations[ViolationDuplicateStore])
}

func TestEnforceModeReturnsEveryViolation(t *testing.T) {
	var logs bytes.Buffer
	x := NewIndex(IndexOptions{Mode: ModeEnforce, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	assert.Equal(t, ModeEnforce, x.Mode())
	require.NoError(t, x.ApplyStored(w1, 1, nil, blocksOf(100, 10)))
	err := x.ApplyStored(w2, 2, nil, blocksOf(200, 10, 210, 11))
	require.ErrorIs(t, err, ErrStability)
	require.NotErrorIs(t, err, ErrEventRejected, "a mismatch does not stop the store")
	assert.Equal(t, []StabilityError{{Kind: ViolationHashMismatch, Worker: w2, EventID: 2, Hash: 200, Enforced: true}}, stabilityErrors(t, err))
	assert.Equal(t, map[Worker]uint32{w2: 2, w1: 1}, scoresOf(x, []uint64{10, 11}, false))

	// Storing again: the mismatch again, and two duplicate stores.
	err = x.ApplyStored(w2, 3, nil, blocksOf(200, 10, 210, 11))
	assert.Equal(t, []Violation{ViolationHashMismatch, ViolationDuplicateStore, ViolationDuplicateStore},
		kinds(stabilityErrors(t, err)))
	assert.Contains(t, logs.String(), `"level":"ERROR"`)

	s := x.Stats()
	assert.False(t, s.Workers[0].Unstable)
	assert.True(t, s.Workers[1].Unstable)
	x.ClearWorker(w2)
	assert.False(t, x.Stats().Workers[1].Unstable, "clearing makes a worker stable again")
	assert.Equal(t, uint64(0), x.Stats().Workers[1].Blocks)
	assert.Equal(t, uint64(2), x.Stats().Workers[1].Violations[ViolationHashMismatch], "counts survive a clear")
	assert.Equal(t, uint64(2), x.Stats().Workers[1].Violations[ViolationDuplicateStore])

	x.SetMode(ModeWarn)
	require.NoError(t, x.ApplyStored(w2, 4, nil, blocksOf(200, 10)))
}

// A block whose hash is the store's parent hash rejects the whole store,
// wherever it stands in the store, as in Dynamo ("Invalid block
// sequence"); the tree is unchanged.
func TestSelfReferenceIsRejected(t *testing.T) {
	long := make([]StoredBlock, 0, 41)
	for i := range uint64(40) {
		long = append(long, StoredBlock{BlockHash: 1000 + i, TokensHash: i})
	}
	long = append(long, StoredBlock{BlockHash: 100, TokensHash: 99})
	for name, tc := range map[string][]StoredBlock{
		"first block":             blocksOf(100, 11),
		"second block":            blocksOf(700, 11, 100, 12),
		"last of a long store":    long,
		"twice, and a repeat too": blocksOf(100, 11, 100, 12),
	} {
		t.Run(name, func(t *testing.T) {
			x := NewIndex(IndexOptions{Mode: ModeWarn})
			require.NoError(t, x.ApplyStored(w1, 1, nil, blocksOf(100, 10)))
			err := x.ApplyStored(w1, 2, u64(100), tc)
			require.ErrorIs(t, err, ErrEventRejected)
			assert.Equal(t, []StabilityError{{Kind: ViolationSelfReference, Worker: w1, EventID: 2, Hash: 100}}, stabilityErrors(t, err))
			assert.Equal(t, uint64(1), x.Stats().Nodes, "tree unchanged")
			assert.Equal(t, map[Worker]uint32{w1: 1}, scoresOf(x, []uint64{10, 11, 12}, false))
			require.NoError(t, checkInvariants(x))
		})
	}
}

func TestWorkersRanksClearAndRemove(t *testing.T) {
	x := NewIndex(IndexOptions{Mode: ModeWarn})
	for _, w := range []Worker{w3, w1b, w1, w2} {
		require.NoError(t, x.ApplyStored(w, 1, nil, blocksOf(100, 10)))
	}
	assert.Equal(t, []Worker{w1, w1b, w2, w3}, x.Workers())
	assert.Len(t, scoresOf(x, []uint64{10}, false), 4)

	x.ClearAllBlocks(1)
	assert.Equal(t, []Worker{w1, w1b, w2, w3}, x.Workers(), "cleared workers stay known")
	assert.Equal(t, map[Worker]uint32{w2: 1, w3: 1}, scoresOf(x, []uint64{10}, false))

	require.NoError(t, x.Apply(1, Event{ID: 2, DPRank: 1, Kind: EventStored, Blocks: blocksOf(100, 10)}))
	require.NoError(t, x.Apply(2, Event{ID: 3, Kind: EventCleared}))
	assert.Equal(t, map[Worker]uint32{w1b: 1, w3: 1}, scoresOf(x, []uint64{10}, false))

	x.RemoveWorker(1)
	x.RemoveWorker(42) // unknown: nothing happens
	assert.Equal(t, []Worker{w2, w3}, x.Workers())
	assert.Equal(t, map[Worker]uint32{w3: 1}, scoresOf(x, []uint64{10}, false))
	require.NoError(t, checkInvariants(x))

	// A removed worker's violations stay in the totals.
	require.Error(t, x.ApplyRemoved(w3, 4, []uint64{5}))
	x.RemoveWorker(3)
	s := x.Stats()
	assert.Equal(t, uint64(1), s.Violations[ViolationBlockNotFound])
	assert.Len(t, s.Workers, 1)
	assert.Equal(t, uint64(0), s.Nodes)
}

func TestApplyRejectsBadEvents(t *testing.T) {
	x := NewIndex(IndexOptions{Mode: ModeWarn})
	require.ErrorIs(t, x.Apply(1, Event{ID: 1}), ErrInvalidArgument)
	require.ErrorIs(t, x.ApplyRouterEvent(RouterEvent{WorkerID: 1, StorageTier: "gpu", Event: Event{Kind: EventCleared}}), ErrInvalidArgument)
	require.NoError(t, x.ApplyRouterEvent(RouterEvent{WorkerID: 1, StorageTier: TierDisk, Event: Event{Kind: EventStored, Blocks: blocksOf(1, 2)}}))
	assert.Equal(t, map[Worker]uint32{w1: 1}, scoresOf(x, []uint64{2}, false))
}

func TestModeFromEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        Mode
	}{
		{EnvEnforce, "1", ModeEnforce},
		{EnvEnforce, "true", ModeEnforce},
		{EnvEnforce, "TRUE", ModeEnforce},
		{EnvEnforce, "0", ModeWarn},
		{EnvEnforce, "yes", ModeWarn},
		{EnvEnforce, "", ModeWarn},
		{EnvEnforceUpstream, "1", ModeEnforce},
		{EnvEnforceUpstream, "true", ModeEnforce},
		{EnvEnforceUpstream, "false", ModeWarn},
	} {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			t.Setenv(EnvEnforce, "")
			t.Setenv(EnvEnforceUpstream, "")
			t.Setenv(tc.name, tc.value)
			assert.Equal(t, tc.want, NewIndex(IndexOptions{}).Mode())
			assert.Equal(t, ModeWarn, NewIndex(IndexOptions{Mode: ModeWarn}).Mode(), "an explicit mode wins")
			x := NewIndex(IndexOptions{Mode: ModeWarn})
			x.SetMode(ModeFromEnvironment)
			assert.Equal(t, tc.want, x.Mode())
		})
	}
}

func TestAppendMatchesDoesNotAllocate(t *testing.T) {
	x := NewIndex(IndexOptions{Mode: ModeWarn})
	q := make([]uint64, 64)
	for i := range q {
		q[i] = uint64(i)
	}
	for id := range uint64(130) {
		// Workers share prefixes of different lengths: bitset and list
		// sets, and drops at every depth.
		var blocks []StoredBlock
		for i := range 1 + id%64 {
			blocks = append(blocks, StoredBlock{BlockHash: 1000 + i, TokensHash: uint64(i)})
		}
		require.NoError(t, x.ApplyStored(Worker{ID: id}, 1, nil, blocks))
	}
	dst := make([]Match, 0, 200)
	got := x.AppendMatches(dst, q, false)
	require.Len(t, got, 130)
	assert.Equal(t, uint32(64), got[63].Score)
	allocs := testing.AllocsPerRun(100, func() {
		dst = x.AppendMatches(dst[:0], q, false)
		dst = x.AppendMatches(dst[:0], q[:3], true)
	})
	assert.Zero(t, allocs)
}

func kinds(errs []StabilityError) []Violation {
	var out []Violation
	for _, e := range errs {
		out = append(out, e.Kind)
	}
	return out
}

func TestStabilityErrorMessages(t *testing.T) {
	err := &StabilityError{Kind: ViolationParentNotFound, Worker: w1b, EventID: 9, Hash: 77, Enforced: true}
	assert.Equal(t, "hash stability violation (parent_not_found, enforce mode): parent block not found; store dropped: worker 1 rank 1, event 9, hash 77", err.Error())
	assert.True(t, errors.Is(err, ErrStability))
	assert.True(t, errors.Is(err, ErrEventRejected))
	assert.False(t, errors.Is(&StabilityError{Kind: ViolationDuplicateStore}, ErrEventRejected))
	for k := range NumViolations {
		assert.NotContains(t, (&StabilityError{Kind: k}).Error(), "unknown")
	}
	assert.Equal(t, "violation_9", Violation(9).String())
}

// TestDumpRebuildsHolesAndDetachedSubtrees dumps an index where workers
// hold blocks without their parents (removal does not cascade), inside a
// detached subtree, with names chosen so that the dump's temporary names
// collide with real ones unless it avoids them.
func TestDumpRebuildsHolesAndDetachedSubtrees(t *testing.T) {
	const d uint64 = 2
	const e = d ^ 0x9e3779b97f4a7c15 // the name the dump first tries for d's stand-in parent
	chainABCD := blocksOf(1, 10, d, 11, e, 12, 4, 13)
	x := NewIndex(IndexOptions{Mode: ModeWarn})
	for _, w := range []Worker{w1, w2, w3} {
		require.NoError(t, x.ApplyStored(w, 1, nil, chainABCD))
	}
	require.NoError(t, x.ApplyRemoved(w2, 2, []uint64{e}))
	require.NoError(t, x.ApplyRemoved(w3, 2, []uint64{d, e}))
	for _, w := range []Worker{w1, w2, w3} {
		require.NoError(t, x.ApplyRemoved(w, 3, []uint64{1}))
	}
	// Block 1 is gone; d heads a detached subtree that w3 holds only the
	// bottom of.
	assert.Empty(t, scoresOf(x, []uint64{10, 11}, false))
	require.NoError(t, x.ApplyStored(w3, 4, nil, blocksOf(1, 10)))
	x.ClearWorker(Worker{ID: 9}) // known, holding nothing

	y := replay(t, x.Dump())
	require.NoError(t, checkInvariants(y))
	assert.Equal(t, blocksByWorker(x), blocksByWorker(y))
	assert.Equal(t, x.Stats().Nodes, y.Stats().Nodes)
	// Both go on alike: re-attaching the detached subtree under block 1.
	for _, z := range []*Index{x, y} {
		require.NoError(t, z.ApplyStored(w1, 5, nil, blocksOf(1, 10)))
		require.NoError(t, z.ApplyStored(w1, 6, u64(1), blocksOf(d, 11)))
	}
	q := []uint64{10, 11, 12, 13}
	assert.Equal(t, map[Worker]uint32{w1: 4, w3: 1}, scoresOf(x, q, false))
	assert.Equal(t, x.AppendMatches(nil, q, false), y.AppendMatches(nil, q, false))
}

func blocksByWorker(x *Index) map[Worker]uint64 {
	out := map[Worker]uint64{}
	for _, ws := range x.Stats().Workers {
		out[ws.Worker] = ws.Blocks
	}
	return out
}
