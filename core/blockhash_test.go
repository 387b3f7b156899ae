package core

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zeebo/xxh3"
)

// The published Dynamo vectors, stated here as well as in the vector files
// so that this package's own tests catch a regression even if a vector
// file were lost.
func TestPublicVectors(t *testing.T) {
	tokens := []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	local, err := BlockHashes(tokens, 4, Options{})
	require.NoError(t, err)
	assert.Equal(t, []uint64{14643705804678351452, 16777012769546811212, 483935686894639516}, local)
	assert.Equal(t, []uint64{14643705804678351452, 4945711292740353085, 12583592247330656132}, SequenceHashes(local))
	assert.Equal(t, uint64(13226331709069118873), RawHash([]byte("test data")))
}

func TestBlockHashesRejectsMisuse(t *testing.T) {
	tokens := make([]uint32, 10)
	tests := []struct {
		name      string
		blockSize int
		opts      Options
		wantMsg   string
	}{
		{"zero block size", 0, Options{}, "block size is 0"},
		{"negative block size", -4, Options{}, "block size is -4"},
		{"min int block size", math.MinInt, Options{}, "must be at least 1"},
		{"more mm entries than blocks", 4, Options{MMHashes: make([][]uint64, 3)}, "for 3 blocks, but the tokens make 2 blocks"},
		{"more mm entries than eagle windows", 5, Options{Eagle: true, MMHashes: make([][]uint64, 2)}, "make 1 blocks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []uint64{42}
			got, err := AppendBlockHashes(dst, tokens, tt.blockSize, tt.opts)
			require.ErrorIs(t, err, ErrInvalidArgument)
			assert.ErrorContains(t, err, tt.wantMsg)
			assert.Equal(t, []uint64{42}, got, "dst must come back unchanged")
		})
	}
}

func TestBlockCount(t *testing.T) {
	tests := []struct {
		tokens, blockSize int
		eagle             bool
		want              int
	}{
		{0, 16, false, 0}, {15, 16, false, 0}, {16, 16, false, 1}, {33, 16, false, 2},
		{0, 16, true, 0}, {16, 16, true, 0}, {17, 16, true, 1}, {33, 16, true, 2}, {1, 1, true, 0}, {2, 1, true, 1},
	}
	for _, tt := range tests {
		got, err := BlockCount(tt.tokens, tt.blockSize, tt.eagle)
		require.NoError(t, err)
		assert.Equal(t, tt.want, got, "%d tokens, block size %d, eagle %v", tt.tokens, tt.blockSize, tt.eagle)
	}
	_, err := BlockCount(-1, 4, false)
	assert.ErrorIs(t, err, ErrInvalidArgument)
}

// Every block and window length from 0 to 80 tokens, every option, on both
// byte-order paths, against the plain reference.
func TestMatchesReferenceAcrossLengths(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	optionSets := []Options{
		{},
		{LoraName: "adapter-a"},
		{CacheNamespace: "tenant-7"},
		{LoraName: "x", CacheNamespace: "y", Eagle: true},
		{Eagle: true},
	}
	for blockSize := 1; blockSize <= 80; blockSize++ {
		tokens := randomTokens(rng, 3*blockSize+2)
		for _, opts := range optionSets {
			want := referenceBlockHashes(tokens, blockSize, opts)
			got, err := BlockHashes(tokens, blockSize, opts)
			require.NoError(t, err)
			require.Equal(t, want, got, "block size %d, options %+v", blockSize, opts)
			withPortablePath(func() {
				got, err = BlockHashes(tokens, blockSize, opts)
			})
			require.NoError(t, err)
			require.Equal(t, want, got, "portable path, block size %d, options %+v", blockSize, opts)
		}
	}
}

func TestMultimodal(t *testing.T) {
	tokens := []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	opts := Options{MMHashes: [][]uint64{nil, {30, 10, 20}}}
	got, err := BlockHashes(tokens, 4, opts)
	require.NoError(t, err)
	assert.Equal(t, referenceBlockHashes(tokens, 4, opts), got)

	plain, err := BlockHashes(tokens, 4, Options{})
	require.NoError(t, err)
	assert.Equal(t, plain[0], got[0], "a nil entry hashes as plain tokens")
	assert.NotEqual(t, plain[1], got[1], "mm hashes change the block's hash")
	assert.Equal(t, plain[2], got[2], "blocks past the mm list hash as plain tokens")

	reordered, err := BlockHashes(tokens, 4, Options{MMHashes: [][]uint64{{}, {20, 30, 10}}})
	require.NoError(t, err)
	assert.Equal(t, got, reordered, "order of mm hashes and empty vs nil entries must not matter")
	assert.Equal(t, []uint64{30, 10, 20}, opts.MMHashes[1], "the caller's slice must not be sorted in place")
}

func TestOptionsChangeOnlyTheSeed(t *testing.T) {
	tokens := randomTokens(rand.New(rand.NewPCG(3, 4)), 64)
	for _, opts := range []Options{{LoraName: "l"}, {CacheNamespace: "n"}, {LoraName: "l", CacheNamespace: "n"}} {
		got, err := BlockHashes(tokens, 16, opts)
		require.NoError(t, err)
		seed := Seed(opts.LoraName, opts.CacheNamespace)
		assert.NotEqual(t, BaseSeed, seed)
		for i := range got {
			b := tokenBytes(tokens[i*16:(i+1)*16], new([]byte))
			assert.Equal(t, xxh3.HashSeed(b, seed), got[i])
		}
	}
	assert.Equal(t, BaseSeed, Seed("", ""), "empty names are absent")
	assert.NotEqual(t, Seed("a", ""), Seed("", "a"), "the LoRA and namespace terms use different seeds")
}

// Properties of the spec that any correct implementation has: the hashes
// of a prefix are a prefix of the hashes, and tokens short of a full block
// (or window) after the last one never change anything.
func TestPrefixAndTailProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 300 {
		blockSize := 1 + rng.IntN(70)
		opts := Options{Eagle: rng.IntN(2) == 0}
		tokens := randomTokens(rng, rng.IntN(6*blockSize))
		full, err := BlockHashes(tokens, blockSize, opts)
		require.NoError(t, err)

		k := rng.IntN(len(full) + 1)
		cut := k * blockSize
		if opts.Eagle && k > 0 {
			cut++ // a window reaches one token into the next block
		}
		prefix, err := BlockHashes(tokens[:cut], blockSize, opts)
		require.NoError(t, err)
		assert.Equal(t, nonNil(full[:k]), nonNil(prefix), "prefix property, block size %d", blockSize)

		tail := randomTokens(rng, rng.IntN(blockSize))
		withTail, err := BlockHashes(append(tokens[:cut:cut], tail...), blockSize, opts)
		require.NoError(t, err)
		assert.Equal(t, nonNil(prefix), nonNil(withTail), "a partial tail changed the hashes, block size %d", blockSize)
	}
}

func TestSequenceChainComposes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	local := make([]uint64, 50)
	for i := range local {
		local[i] = rng.Uint64()
	}
	seq := SequenceHashes(local)
	require.Len(t, seq, len(local))
	assert.Equal(t, local[0], seq[0], "the chain starts at the first local hash")
	for i := 1; i < len(seq); i++ {
		assert.Equal(t, ChainStep(seq[i-1], local[i]), seq[i])
		assert.Equal(t, referenceChainStep(seq[i-1], local[i]), seq[i])
	}
	// Continuing a chain from its last hash gives the rest of the chain.
	split := 20
	rest := AppendSequenceHashes(nil, append([]uint64{seq[split-1]}, local[split:]...))
	assert.Equal(t, seq[split:], rest[1:])
	assert.Empty(t, SequenceHashes(nil))
}

func TestChainStepExtremes(t *testing.T) {
	for _, v := range [][2]uint64{{0, 0}, {math.MaxUint64, 0}, {0, math.MaxUint64}, {math.MaxUint64, math.MaxUint64}, {1337, 1}} {
		assert.Equal(t, referenceChainStep(v[0], v[1]), ChainStep(v[0], v[1]), "%v", v)
	}
}

func TestAppendFormsDoNotAllocate(t *testing.T) {
	tokens := randomTokens(rand.New(rand.NewPCG(9, 10)), 8192)
	for _, blockSize := range []int{1, 4, 16, 32, 64, 512} {
		for _, opts := range []Options{{}, {LoraName: "a", CacheNamespace: "b"}, {Eagle: true}} {
			local := make([]uint64, 0, len(tokens))
			seq := make([]uint64, 0, len(tokens))
			allocs := testing.AllocsPerRun(20, func() {
				local, _ = AppendBlockHashes(local[:0], tokens, blockSize, opts)
				seq = AppendSequenceHashes(seq[:0], local)
			})
			assert.Zero(t, allocs, "block size %d, options %+v", blockSize, opts)
		}
	}
}

func randomTokens(rng *rand.Rand, n int) []uint32 {
	tokens := make([]uint32, n)
	for i := range tokens {
		tokens[i] = rng.Uint32()
	}
	return tokens
}

func nonNil(s []uint64) []uint64 {
	if s == nil {
		return []uint64{}
	}
	return s
}
