package wasmhost

import (
	"encoding/hex"
	"testing"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/internal/vectors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVectors runs every case of every v1 vector file through the module.
func TestVectors(t *testing.T) {
	m := sharedModule(t)
	groups, err := vectors.Load(core.SpecVersion)
	require.NoError(t, err)
	counts := map[string]int{}
	for _, g := range groups {
		t.Run(g.Name, func(t *testing.T) {
			for _, c := range g.Cases {
				t.Run(c.Name, func(t *testing.T) {
					counts[c.Kind]++
					checkCase(t, m, c)
				})
			}
		})
	}
	for _, kind := range []string{vectors.KindBlock, vectors.KindError, vectors.KindSeed, vectors.KindChain, vectors.KindRaw} {
		assert.Positive(t, counts[kind], "no %s case ran", kind)
	}
}

func checkCase(t *testing.T, m *Module, c vectors.Case) {
	switch c.Kind {
	case vectors.KindBlock:
		opts := c.CoreOptions()
		blocks, err := m.BlockHashes(c.Tokens, c.BlockSize, opts)
		require.NoError(t, err)
		assert.Equal(t, vectors.Uint64s(c.BlockHashes), nonNil(blocks), "block hashes")
		seq, err := m.SequenceHashes(blocks)
		require.NoError(t, err)
		assert.Equal(t, vectors.Uint64s(c.SequenceHashes), nonNil(seq), "sequence hashes")
		seed, err := m.Seed(opts.LoraName, opts.CacheNamespace)
		require.NoError(t, err)
		assert.Equal(t, uint64(c.Seed), seed, "seed")
		// The append form must extend dst, not overwrite it.
		prefix := []uint64{42}
		appended, err := m.AppendBlockHashes(prefix, c.Tokens, c.BlockSize, opts)
		require.NoError(t, err)
		assert.Equal(t, append([]uint64{42}, vectors.Uint64s(c.BlockHashes)...), appended)
		checkBlockAndSequence(t, m, c)
	case vectors.KindError:
		dst := []uint64{7}
		got, err := m.AppendBlockHashes(dst, c.Tokens, c.BlockSize, c.CoreOptions())
		require.Error(t, err, "reason %s", c.Error)
		assert.ErrorIs(t, err, core.ErrInvalidArgument)
		assert.Equal(t, []uint64{7}, got, "an error must leave dst unchanged")
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, StatusInvalidArgument, e.Status)
		assert.NotEmpty(t, e.Message, "the module's kvhash_last_error message")

		local, seq, err := m.AppendBlockAndSequenceHashes([]uint64{7}, []uint64{8}, c.Tokens, c.BlockSize, c.CoreOptions())
		require.ErrorAs(t, err, &e, "reason %s", c.Error)
		assert.Equal(t, StatusInvalidArgument, e.Status)
		assert.Equal(t, "kvhash_block_and_sequence_hashes", e.Op)
		assert.Equal(t, []uint64{7}, local, "an error must leave local unchanged")
		assert.Equal(t, []uint64{8}, seq, "an error must leave seq unchanged")
	case vectors.KindSeed:
		seed, err := m.Seed(c.LoraName, c.CacheNamespace)
		require.NoError(t, err)
		assert.Equal(t, uint64(c.Seed), seed)
	case vectors.KindChain:
		locals := vectors.Uint64s(c.BlockHashes)
		seq, err := m.SequenceHashes(locals)
		require.NoError(t, err)
		want := vectors.Uint64s(c.SequenceHashes)
		assert.Equal(t, nonNil(want), nonNil(seq))
		// ChainStep is the same chain one step at a time.
		for i := 1; i < len(locals); i++ {
			step, err := m.ChainStep(want[i-1], locals[i])
			require.NoError(t, err)
			require.Equal(t, want[i], step, "step %d", i)
		}
	case vectors.KindRaw:
		checkRaw(t, m, c)
	default:
		t.Fatalf("unknown case kind %q: the reader must learn it", c.Kind)
	}
}

// checkBlockAndSequence checks a block vector through
// kvhash_block_and_sequence_hashes: both outputs, and that the append form
// extends each destination.
func checkBlockAndSequence(t *testing.T, m *Module, c vectors.Case) {
	wantLocal, wantSeq := vectors.Uint64s(c.BlockHashes), vectors.Uint64s(c.SequenceHashes)
	local, seq, err := m.BlockAndSequenceHashes(c.Tokens, c.BlockSize, c.CoreOptions())
	require.NoError(t, err)
	assert.Equal(t, nonNil(wantLocal), nonNil(local), "fused block hashes")
	assert.Equal(t, nonNil(wantSeq), nonNil(seq), "fused sequence hashes")

	local, seq, err = m.AppendBlockAndSequenceHashes([]uint64{1, 2}, []uint64{3}, c.Tokens, c.BlockSize, c.CoreOptions())
	require.NoError(t, err)
	assert.Equal(t, append([]uint64{1, 2}, wantLocal...), local)
	assert.Equal(t, append([]uint64{3}, wantSeq...), seq)
}

// checkRaw checks a raw-bytes vector through kvhash_raw_hash.
func checkRaw(t *testing.T, m *Module, c vectors.Case) {
	b, err := hex.DecodeString(c.BytesHex)
	require.NoError(t, err)
	got, err := m.RawHash(b)
	require.NoError(t, err)
	assert.Equal(t, uint64(c.Hash), got)
}

// nonNil makes empty results comparable whatever their nil-ness.
func nonNil(s []uint64) []uint64 {
	if s == nil {
		return []uint64{}
	}
	return s
}
