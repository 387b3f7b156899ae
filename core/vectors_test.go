package core_test

import (
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/internal/vectors"
)

// TestVectors runs every oracle-made v1 vector through core.
func TestVectors(t *testing.T) {
	groups, err := vectors.Load(core.SpecVersion)
	require.NoError(t, err)
	kinds := map[string]int{}
	for _, g := range groups {
		for _, c := range g.Cases {
			kinds[c.Kind]++
			t.Run(g.Name+"/"+c.Name, func(t *testing.T) { checkVector(t, c) })
		}
	}
	// A schema change that renamed a kind would otherwise skip its cases.
	for _, k := range []string{vectors.KindBlock, vectors.KindError, vectors.KindSeed, vectors.KindChain, vectors.KindRaw} {
		assert.Positive(t, kinds[k], "no %q vectors ran", k)
	}
	assert.Len(t, kinds, 5, "unknown case kinds: %v", kinds)
}

func checkVector(t *testing.T, c vectors.Case) {
	switch c.Kind {
	case vectors.KindBlock:
		opts := c.CoreOptions()
		got, err := core.BlockHashes(c.Tokens, c.BlockSize, opts)
		require.NoError(t, err)
		assert.Equal(t, vectors.Uint64s(c.BlockHashes), nonNil(got), "block hashes")
		assert.Equal(t, vectors.Uint64s(c.SequenceHashes), nonNil(core.SequenceHashes(got)), "sequence hashes")
		assert.Equal(t, uint64(c.Seed), core.Seed(opts.LoraName, opts.CacheNamespace), "seed")
	case vectors.KindError:
		got, err := core.BlockHashes(c.Tokens, c.BlockSize, c.CoreOptions())
		require.ErrorIs(t, err, core.ErrInvalidArgument, "expected %s", c.Error)
		assert.Empty(t, got)
	case vectors.KindSeed:
		assert.Equal(t, uint64(c.Seed), core.Seed(c.LoraName, c.CacheNamespace))
	case vectors.KindChain:
		assert.Equal(t, vectors.Uint64s(c.SequenceHashes), nonNil(core.SequenceHashes(vectors.Uint64s(c.BlockHashes))))
	case vectors.KindRaw:
		b, err := hex.DecodeString(c.BytesHex)
		require.NoError(t, err)
		assert.Equal(t, uint64(c.Hash), core.RawHash(b))
	default:
		t.Fatalf("unknown case kind %q", c.Kind)
	}
}

func nonNil(s []uint64) []uint64 {
	if s == nil {
		return []uint64{}
	}
	return s
}
