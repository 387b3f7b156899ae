package wasmhost

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
)

// cappedModule loads the module with instances capped at limit bytes.
func cappedModule(t *testing.T, limit uint64) *Module {
	t.Helper()
	m, err := Load(context.Background(), moduleBytes(t), Config{MemoryLimit: limit, Instances: 1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	return m
}

func TestConfigMemoryLimit(t *testing.T) {
	tests := []struct{ in, want uint64 }{
		{0, 0},
		{1 << 32, 0},
		{1 << 40, 0},
		{1, minMemoryLimit},
		{256<<20 + 12345, 256 << 20},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Config{MemoryLimit: tt.in}.memoryLimit(), "%d", tt.in)
	}
}

// Indexes dropped without Free cost little each (issue 10, item 1): 40,000
// live ones fit an instance capped at 256 MiB, which 40,000 of the old
// 229 KB node pages would have overrun 35 times; and hashing still works.
func TestManyLiveIndexesFitAndHashingStillWorks(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 40,000 indexes")
	}
	m := cappedModule(t, 256<<20)
	for i := range 40_000 {
		_, err := m.NewIndex(core.ModeWarn)
		require.NoError(t, err, "index %d", i)
	}
	blocks, err := m.BlockHashes(publicTokens, 4, core.Options{})
	require.NoError(t, err)
	assert.Equal(t, publicBlocks, blocks)
}

// Filling an instance gives ErrNoMemory, never ErrInstanceFailed: the
// instance keeps its indexes and keeps hashing, and freeing makes room.
func TestMemoryExhaustionIsAnErrorNotAFailure(t *testing.T) {
	m := cappedModule(t, 64<<20)
	x, err := m.NewIndex(core.ModeWarn)
	require.NoError(t, err)
	blocks := make([]core.StoredBlock, 20_000)
	for i := range blocks {
		blocks[i] = core.StoredBlock{BlockHash: uint64(i + 1), TokensHash: uint64(i + 1)}
	}
	var filled int
	var full error
	for w := range uint64(1000) {
		if full = x.ApplyStored(core.Worker{ID: w}, 1, nil, blocks); full != nil {
			break
		}
		filled++
	}
	require.Error(t, full, "64 MiB never filled")
	assert.ErrorIs(t, full, ErrNoMemory)
	assert.False(t, errors.Is(full, ErrInstanceFailed), "%v", full)
	assert.Equal(t, StatusNoMemory, full.(*Error).Status)
	assert.Contains(t, full.Error(), "KVHASH_ERR_NO_MEMORY")
	require.Positive(t, filled)

	got, err := m.BlockHashes(publicTokens, 4, core.Options{})
	require.NoError(t, err, "hashing in a full instance")
	assert.Equal(t, publicBlocks, got)
	stats, err := x.Stats()
	require.NoError(t, err)
	assert.Len(t, stats.Workers, filled, "the workers stored before the refusal are all there")

	// A prompt whose hashes the full module cannot hold is too large, not
	// an internal error (issue 10, item 11).
	_, err = m.BlockHashes(make([]uint32, 8<<20), 1, core.Options{})
	assert.ErrorIs(t, err, ErrNoMemory)
	assert.False(t, errors.Is(err, ErrInternal), "%v", err)

	require.NoError(t, x.Free())
	y, err := m.NewIndex(core.ModeWarn)
	require.NoError(t, err, "freeing made room")
	require.NoError(t, y.ApplyStored(core.Worker{ID: 1}, 1, nil, blocks))
}

// The host sizes a prompt's output by blocks, not tokens (issue 10, item
// 11: blockHashes of 100M tokens asked for 800 MB of output, passed the
// module's 1 GiB of buffers and came back as KVHASH_ERR_INTERNAL). Here,
// in a module of 128 MiB (80 MiB of heap): 12M tokens are 48 MB and their
// 750,000 hashes 6 MB, which fit; an output sized by tokens, 96 MB more,
// would not.
func TestLargePromptOutputSizedByBlocks(t *testing.T) {
	m := cappedModule(t, 128<<20)
	tokens := make([]uint32, 12_000_000)
	blocks, err := m.BlockHashes(tokens, 16, core.Options{})
	require.NoError(t, err)
	require.Len(t, blocks, len(tokens)/16)
	assert.Equal(t, blocks[0], blocks[len(blocks)-1], "every block is 16 zero tokens")
	local, seq, err := m.BlockAndSequenceHashes(tokens, 16, core.Options{})
	require.NoError(t, err, "two outputs sized by blocks fit too")
	assert.Equal(t, blocks, local)
	assert.Len(t, seq, len(blocks))
}
