package wasmhost

import (
	"testing"

	"github.com/kvhash/kvhash/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fused call is the hot path of a router hashing prompts through the
// module: with room in both destinations it must not allocate, so that
// its cost is the module's work and the copies only.
func TestAppendBlockAndSequenceHashesDoesNotAllocate(t *testing.T) {
	m := sharedModule(t)
	tokens := make([]uint32, 1024)
	for i := range tokens {
		tokens[i] = uint32(i)
	}
	local, seq := make([]uint64, 0, 64), make([]uint64, 0, 64)
	var err error
	// The first call grows the instance's scratch allocation.
	local, seq, err = m.AppendBlockAndSequenceHashes(local, seq, tokens, 16, core.Options{})
	require.NoError(t, err)
	require.Len(t, local, 64)
	wantLocal, wantSeq, err := core.AppendBlockAndSequenceHashes(nil, nil, tokens, 16, core.Options{})
	require.NoError(t, err)
	assert.Equal(t, wantLocal, local)
	assert.Equal(t, wantSeq, seq)

	allocs := testing.AllocsPerRun(20, func() {
		local, seq, err = m.AppendBlockAndSequenceHashes(local[:0], seq[:0], tokens, 16, core.Options{})
		if err != nil || len(local) != 64 || len(seq) != 64 {
			panic("unexpected result")
		}
	})
	assert.Zero(t, allocs)
}
