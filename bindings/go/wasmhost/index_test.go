package wasmhost

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/kvhash/kvhash/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newTestIndex(t *testing.T, mode core.Mode) *Index {
	t.Helper()
	x, err := sharedModule(t).NewIndex(mode)
	require.NoError(t, err)
	t.Cleanup(func() { _ = x.Free() })
	return x
}

func ptr(v uint64) *uint64 { return &v }

func storedEvent(id uint64, parent *uint64, dpRank uint32, blocks ...core.StoredBlock) core.Event {
	return core.Event{ID: id, DPRank: dpRank, Kind: core.EventStored, ParentHash: parent, Blocks: blocks}
}

func block(external, local uint64) core.StoredBlock {
	return core.StoredBlock{BlockHash: external, TokensHash: local}
}

// populate: worker 1 holds the three public blocks, worker 2 the first
// two under its own external hashes.
func populate(t *testing.T, x *Index) {
	t.Helper()
	L := publicBlocks
	require.NoError(t, x.Apply(1, storedEvent(1, nil, 0, block(101, L[0]), block(102, L[1]), block(103, L[2]))))
	require.NoError(t, x.ApplyJSON(2, fmt.Appendf(nil,
		`{"event_id":1,"data":{"stored":{"parent_hash":null,"blocks":[{"block_hash":201,"tokens_hash":%d},{"block_hash":202,"tokens_hash":%d}]}},"dp_rank":0}`,
		L[0], L[1])))
}

var (
	w1 = core.Worker{ID: 1}
	w2 = core.Worker{ID: 2}
)

func TestIndexMatchesAndUpdates(t *testing.T) {
	x := newTestIndex(t, core.ModeWarn)
	populate(t, x)
	got, err := x.FindMatches(publicBlocks, false)
	require.NoError(t, err)
	assert.Equal(t, core.OverlapScores{
		Scores:      map[core.Worker]uint32{w1: 3, w2: 2},
		TreeSizes:   map[core.Worker]uint64{w1: 3, w2: 2},
		Frequencies: []uint32{},
	}, got)

	tests := []struct {
		name   string
		update func() error
		want   map[core.Worker]uint32
	}{
		{"removed", func() error { return x.ApplyRemoved(w1, 2, []uint64{103}) }, map[core.Worker]uint32{w1: 2, w2: 2}},
		{"stored again without JSON", func() error {
			return x.ApplyStored(w1, 3, ptr(102), []core.StoredBlock{block(103, publicBlocks[2])})
		}, map[core.Worker]uint32{w1: 3, w2: 2}},
		{"cleared rank", func() error { return x.ClearWorker(w2) }, map[core.Worker]uint32{w1: 3}},
		{"router event", func() error {
			return x.ApplyRouterEvent(core.RouterEvent{WorkerID: 2, Event: storedEvent(4, nil, 1, block(301, publicBlocks[0]))})
		}, map[core.Worker]uint32{w1: 3, {ID: 2, DPRank: 1}: 1}},
		{"remove worker", func() error { return x.RemoveWorker(2) }, map[core.Worker]uint32{w1: 3}},
		{"clear all blocks", func() error { return x.ClearAllBlocks(1) }, map[core.Worker]uint32{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, tt.update())
			got, err := x.FindMatches(publicBlocks, false)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got.Scores)
		})
	}
	workers, err := x.Workers()
	require.NoError(t, err)
	assert.Equal(t, []core.Worker{w1}, workers, "a cleared worker stays known, a removed one does not")
}

func TestIndexErrors(t *testing.T) {
	x := newTestIndex(t, core.ModeWarn)
	populate(t, x)
	tests := []struct {
		name   string
		call   func() error
		is     []error
		status Status
	}{
		{"parent not found", func() error {
			return x.Apply(4, storedEvent(1, ptr(999), 0, block(401, publicBlocks[1])))
		}, []error{core.ErrStability, ErrRejected}, StatusRejected},
		{"malformed JSON", func() error { return x.ApplyJSON(1, []byte(`{"event_id":`)) }, []error{core.ErrDecode}, StatusDecode},
		{"empty JSON", func() error { return x.ApplyJSON(1, nil) }, []error{core.ErrDecode}, StatusDecode},
		{"router event without event", func() error { return x.ApplyRouterEventJSON([]byte(`{"worker_id":1}`)) }, []error{core.ErrDecode}, StatusDecode},
		{"bad mode", func() error { return x.SetMode(core.Mode(9)) }, []error{core.ErrInvalidArgument}, StatusInvalidArgument},
		{"unknown kind", func() error { return x.Apply(1, core.Event{Kind: 9}) }, []error{core.ErrInvalidArgument}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			require.Error(t, err)
			for _, target := range tt.is {
				assert.ErrorIs(t, err, target)
			}
			if tt.status != 0 {
				var e *Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, tt.status, e.Status)
				assert.NotEmpty(t, e.Message)
			}
			// The index is unchanged and keeps answering.
			got, err := x.FindMatches(publicBlocks, false)
			require.NoError(t, err)
			assert.Equal(t, map[core.Worker]uint32{w1: 3, w2: 2}, got.Scores)
		})
	}
	stats, err := x.Stats()
	require.NoError(t, err)
	assert.Equal(t, uint64(1), stats.Violations[core.ViolationParentNotFound])
}

func TestIndexModeAndStats(t *testing.T) {
	x := newTestIndex(t, core.ModeEnforce)
	mode, err := x.Mode()
	require.NoError(t, err)
	assert.Equal(t, core.ModeEnforce, mode)
	require.NoError(t, x.SetMode(core.ModeWarn))
	// Worker 2 names worker 1's blocks differently: a hash mismatch,
	// only counted in warn mode.
	populate(t, x)
	require.NoError(t, x.SetMode(core.ModeEnforce))
	err = x.ApplyRemoved(w1, 9, []uint64{123456})
	assert.ErrorIs(t, err, core.ErrStability)
	require.NoError(t, x.SetMode(core.ModeWarn))
	mode, err = x.Mode()
	require.NoError(t, err)
	assert.Equal(t, core.ModeWarn, mode)

	stats, err := x.Stats()
	require.NoError(t, err)
	assert.Equal(t, uint64(1), stats.Violations[core.ViolationBlockNotFound])
	assert.Equal(t, uint64(2), stats.Violations[core.ViolationHashMismatch])
	require.Len(t, stats.Workers, 2)
	assert.Equal(t, w1, stats.Workers[0].Worker)
	assert.Equal(t, uint64(3), stats.Workers[0].Blocks)
	assert.True(t, stats.Workers[0].Unstable, "an enforced violation marks the worker unstable")
	// The decoded stats re-encode to the module's exact JSON.
	raw, err := x.StatsJSON()
	require.NoError(t, err)
	again, err := stats.MarshalJSON()
	require.NoError(t, err)
	assert.JSONEq(t, string(raw), string(again))
}

func TestIndexFreeAndUnknownHandle(t *testing.T) {
	x, err := sharedModule(t).NewIndex(core.ModeWarn)
	require.NoError(t, err)
	populate(t, x)
	require.NoError(t, x.Free())
	assert.ErrorIs(t, x.Free(), ErrUnknownHandle)
	assert.ErrorContains(t, x.Free(), "the index was freed", "the message says why (issue 10, item 13)")
	_, err = x.FindMatches(publicBlocks, false)
	assert.ErrorIs(t, err, ErrUnknownHandle)
	assert.ErrorIs(t, x.RemoveWorker(1), ErrUnknownHandle)
	_, err = x.StatsJSON()
	assert.ErrorIs(t, err, ErrUnknownHandle)
	_, err = x.Dump()
	assert.ErrorIs(t, err, ErrUnknownHandle)
	_, err = x.Workers()
	assert.ErrorIs(t, err, ErrUnknownHandle)
	// Hashing on the same module is unaffected.
	blocks, err := sharedModule(t).BlockHashes(publicTokens, 4, core.Options{})
	require.NoError(t, err)
	assert.Equal(t, publicBlocks, blocks)
}

// TestIndexAgreesWithCore replays one random event stream into the module's
// index and into core's, and compares every answer. core is only the
// oracle here; the host computes nothing.
func TestIndexAgreesWithCore(t *testing.T) {
	x := newTestIndex(t, core.ModeWarn)
	ref := core.NewIndex(core.IndexOptions{Mode: core.ModeWarn})
	r := rand.New(rand.NewPCG(7, 11))
	locals := make([]uint64, 64)
	for i := range locals {
		locals[i] = r.Uint64()
	}
	// Many workers, so matches outgrow the first buffer of 16.
	for id := range uint64(24) {
		w := core.Worker{ID: id + 1, DPRank: uint32(id % 3)}
		var parent *uint64
		for ev := range uint64(6) {
			n := 1 + r.IntN(5)
			var blocks []core.StoredBlock
			for range n {
				blocks = append(blocks, block(r.Uint64N(1<<20), locals[r.IntN(8)+len(blocks)]))
			}
			event := storedEvent(ev, parent, w.DPRank, blocks...)
			errWasm, errCore := x.Apply(w.ID, event), ref.Apply(w.ID, event)
			require.Equal(t, errCore == nil, errWasm == nil, "event %d of %v: core %v, wasm %v", ev, w, errCore, errWasm)
			if r.IntN(3) == 0 {
				gone := []uint64{blocks[0].BlockHash, r.Uint64()}
				errWasm, errCore = x.ApplyRemoved(w, ev+100, gone), ref.ApplyRemoved(w, ev+100, gone)
				require.Equal(t, errCore == nil, errWasm == nil)
			}
			if r.IntN(2) == 0 {
				parent = &blocks[len(blocks)-1].BlockHash
			}
		}
	}
	for i := range 50 {
		q := locals[:1+i%16]
		for _, early := range []bool{false, true} {
			got, err := x.AppendMatches(nil, q, early)
			require.NoError(t, err)
			assert.Equal(t, ref.AppendMatches(nil, q, early), got, "query %d early=%v", i, early)
		}
	}
	workers, err := x.Workers()
	require.NoError(t, err)
	assert.Equal(t, ref.Workers(), workers)
	stats, err := x.Stats()
	require.NoError(t, err)
	assert.Equal(t, ref.Stats(), stats)
	dump, err := x.Dump()
	require.NoError(t, err)
	assert.Equal(t, ref.Dump(), dump)

	// The dump rebuilds the same index in the module.
	y := newTestIndex(t, core.ModeWarn)
	for _, ev := range dump {
		require.NoError(t, y.ApplyRouterEvent(ev))
	}
	for i := range 16 {
		a, err := x.AppendMatches(nil, locals[:1+i], false)
		require.NoError(t, err)
		b, err := y.AppendMatches(nil, locals[:1+i], false)
		require.NoError(t, err)
		assert.Equal(t, a, b)
	}
}

// TestIndexModeFromEnvironment: the module reads the enforcement variables
// of this process, passed in at load.
func TestIndexModeFromEnvironment(t *testing.T) {
	tests := []struct {
		name string
		set  string
		want core.Mode
	}{
		{"unset", "", core.ModeWarn},
		{stabilityVars[0], stabilityVars[0], core.ModeEnforce},
		{stabilityVars[1], stabilityVars[1], core.ModeEnforce},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, name := range stabilityVars {
				t.Setenv(name, "")
			}
			if tt.set != "" {
				t.Setenv(tt.set, "1")
			}
			ctx := context.Background()
			m, err := Load(ctx, moduleBytes(t), Config{})
			require.NoError(t, err)
			defer m.Close(ctx)
			x, err := m.NewIndex(core.ModeFromEnvironment)
			require.NoError(t, err)
			mode, err := x.Mode()
			require.NoError(t, err)
			assert.Equal(t, tt.want, mode)
		})
	}
}
