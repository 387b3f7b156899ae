package abi

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
)

// The published Dynamo vector (tokens 1..12, block size 4).
var (
	publicTokens = []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	publicLocal  = []uint64{14643705804678351452, 16777012769546811212, 483935686894639516}
	publicSeq    = []uint64{14643705804678351452, 4945711292740353085, 12583592247330656132}
)

const sentinel = 0xDEADBEEFDEADBEEF

func filled(n int) []uint64 {
	s := make([]uint64, n)
	for i := range s {
		s[i] = sentinel
	}
	return s
}

func TestRawHashPublicVector(t *testing.T) {
	assert.Equal(t, uint64(13226331709069118873), RawHash([]byte("test data")))
	assert.Equal(t, core.RawHash(nil), RawHash([]byte{}))
}

func TestBlockHashesPublicVector(t *testing.T) {
	out := filled(4)
	n, err := BlockHashes(HashInput{publicTokens, 4, "", "", false, nil, nil}, out)
	require.NoError(t, err)
	assert.Equal(t, publicLocal, out[:n])
	assert.Equal(t, uint64(sentinel), out[3], "nothing written past the result")

	seq := filled(3)
	n, err = SequenceHashes(publicLocal, seq)
	require.NoError(t, err)
	assert.Equal(t, publicSeq, seq[:n])
	assert.Equal(t, publicSeq[1], ChainStep(publicLocal[0], publicLocal[1]))
}

func TestBlockAndSequenceHashesPublicVector(t *testing.T) {
	local, seq := filled(4), filled(4)
	n, err := BlockAndSequenceHashes(HashInput{publicTokens, 4, "", "", false, nil, nil}, local, seq)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	assert.Equal(t, publicLocal, local[:n])
	assert.Equal(t, publicSeq, seq[:n])
	assert.Equal(t, uint64(sentinel), local[3], "nothing written past the result")
	assert.Equal(t, uint64(sentinel), seq[3], "nothing written past the result")
}

func TestBlockHashesMatchesCore(t *testing.T) {
	tokens := make([]uint32, 100)
	for i := range tokens {
		tokens[i] = uint32(i * 7919)
	}
	tests := []struct {
		name      string
		blockSize int64
		lora, ns  string
		eagle     bool
		mmHashes  []uint64
		mmCounts  []uint32
		perBlock  [][]uint64
	}{
		{name: "plain", blockSize: 16},
		{name: "lora and namespace", blockSize: 7, lora: "my-lora", ns: "tenant-a"},
		{name: "eagle", blockSize: 4, eagle: true},
		{name: "multimodal", blockSize: 16, mmHashes: []uint64{9, 3, math.MaxUint64}, mmCounts: []uint32{2, 0, 1},
			perBlock: [][]uint64{{9, 3}, nil, {math.MaxUint64}}},
		{name: "multimodal eagle", blockSize: 32, eagle: true, mmHashes: []uint64{5}, mmCounts: []uint32{0, 1},
			perBlock: [][]uint64{nil, {5}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := core.BlockHashes(tokens, int(tt.blockSize), core.Options{
				LoraName: tt.lora, CacheNamespace: tt.ns, Eagle: tt.eagle, MMHashes: tt.perBlock})
			require.NoError(t, err)
			out := filled(len(want))
			n, err := BlockHashes(HashInput{tokens, tt.blockSize, tt.lora, tt.ns, tt.eagle, tt.mmHashes, tt.mmCounts}, out)
			require.NoError(t, err)
			assert.Equal(t, want, out[:n])

			local, seq := filled(len(want)), filled(len(want))
			n, err = BlockAndSequenceHashes(HashInput{tokens, tt.blockSize, tt.lora, tt.ns, tt.eagle, tt.mmHashes, tt.mmCounts}, local, seq)
			require.NoError(t, err)
			assert.Equal(t, want, local[:n])
			assert.Equal(t, core.SequenceHashes(want), seq[:n])
		})
	}
}

func TestBlockHashesErrors(t *testing.T) {
	tests := []struct {
		name      string
		tokens    []uint32
		blockSize int64
		mmHashes  []uint64
		mmCounts  []uint32
		outCap    int
		want      Status
		wantN     int
	}{
		{name: "block size 0", tokens: publicTokens, blockSize: 0, outCap: 3, want: StatusInvalidArgument},
		{name: "block size negative", tokens: publicTokens, blockSize: -4, outCap: 3, want: StatusInvalidArgument},
		{name: "block size min int64", tokens: publicTokens, blockSize: math.MinInt64, outCap: 3, want: StatusInvalidArgument},
		{name: "block size 0 beats small buffer", tokens: publicTokens, blockSize: 0, outCap: 0, want: StatusInvalidArgument},
		{name: "too small", tokens: publicTokens, blockSize: 4, outCap: 2, want: StatusBufferTooSmall, wantN: 3},
		{name: "size query", tokens: publicTokens, blockSize: 1, outCap: 0, want: StatusBufferTooSmall, wantN: 12},
		{name: "empty result needs no room", tokens: publicTokens[:3], blockSize: 4, outCap: 0, want: StatusOK},
		{name: "more mm entries than blocks", tokens: publicTokens, blockSize: 4, mmCounts: []uint32{0, 0, 0, 0},
			outCap: 3, want: StatusInvalidArgument},
		{name: "mm too long beats small buffer", tokens: publicTokens, blockSize: 4, mmCounts: []uint32{0, 0, 0, 0},
			outCap: 0, want: StatusInvalidArgument},
		{name: "mm values and counts disagree", tokens: publicTokens, blockSize: 4, mmHashes: []uint64{1},
			mmCounts: []uint32{2}, outCap: 3, want: StatusInvalidArgument},
		// A count no block can have is refused before core copies the
		// hashes (issue 10, item 5: in C, a count near 2^32 aborted the
		// process for lack of memory).
		{name: "mm count above any block", tokens: publicTokens, blockSize: 4, mmHashes: make([]uint64, maxMMPerBlock+1),
			mmCounts: []uint32{maxMMPerBlock + 1}, outCap: 3, want: StatusInvalidArgument},
		{name: "mm count at the limit", tokens: publicTokens, blockSize: 4, mmHashes: make([]uint64, maxMMPerBlock),
			mmCounts: []uint32{maxMMPerBlock}, outCap: 3, want: StatusOK, wantN: 3},
		{name: "mm and small buffer", tokens: publicTokens, blockSize: 4, mmHashes: []uint64{1}, mmCounts: []uint32{1},
			outCap: 1, want: StatusBufferTooSmall, wantN: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filled(tt.outCap)
			n, err := BlockHashes(HashInput{tt.tokens, tt.blockSize, "", "", false, tt.mmHashes, tt.mmCounts}, out)
			assert.Equal(t, tt.want, StatusOf(err), "%v", err)
			assert.Equal(t, tt.wantN, n)
			if err != nil {
				assert.Equal(t, filled(tt.outCap), out, "a failed call writes nothing")
			}
		})
		// The fused export validates exactly as kvhash_block_hashes does.
		t.Run(tt.name+"/with sequence", func(t *testing.T) {
			local, seq := filled(tt.outCap), filled(tt.outCap)
			n, err := BlockAndSequenceHashes(HashInput{tt.tokens, tt.blockSize, "", "", false, tt.mmHashes, tt.mmCounts}, local, seq)
			assert.Equal(t, tt.want, StatusOf(err), "%v", err)
			assert.Equal(t, tt.wantN, n)
			if err != nil {
				assert.Equal(t, filled(tt.outCap), local, "a failed call writes nothing")
				assert.Equal(t, filled(tt.outCap), seq, "a failed call writes nothing")
			}
		})
	}
}

// Each output must hold every block: the shorter one decides, and a call
// refused for size writes to neither.
func TestBlockAndSequenceHashesTooSmall(t *testing.T) {
	for _, caps := range [][2]int{{3, 2}, {2, 3}, {0, 3}, {3, 0}} {
		local, seq := filled(caps[0]), filled(caps[1])
		n, err := BlockAndSequenceHashes(HashInput{publicTokens, 4, "", "", false, nil, nil}, local, seq)
		assert.Equal(t, StatusBufferTooSmall, StatusOf(err), "caps %v", caps)
		assert.Equal(t, 3, n, "caps %v", caps)
		assert.Equal(t, filled(caps[0]), local, "caps %v", caps)
		assert.Equal(t, filled(caps[1]), seq, "caps %v", caps)
		assert.Contains(t, err.Error(), "each of out_local and out_sequence has room for")
	}
}

func TestSequenceHashesTooSmall(t *testing.T) {
	out := filled(2)
	n, err := SequenceHashes(publicLocal, out)
	assert.Equal(t, StatusBufferTooSmall, StatusOf(err))
	assert.Equal(t, 3, n)
	assert.Equal(t, filled(2), out)
	assert.Contains(t, err.Error(), "room for 2, 3 needed")

	n, err = SequenceHashes(nil, nil)
	require.NoError(t, err)
	assert.Zero(t, n)
}

func TestBlockCount(t *testing.T) {
	tests := []struct {
		nTokens   uint64
		blockSize int64
		eagle     bool
		want      int
		status    Status
	}{
		{12, 4, false, 3, StatusOK},
		{13, 4, true, 3, StatusOK},
		{12, 4, true, 2, StatusOK},
		{0, 4, true, 0, StatusOK},
		{12, 0, false, 0, StatusInvalidArgument},
		{12, -1, false, 0, StatusInvalidArgument},
		{math.MaxUint64, 4, false, 0, StatusInvalidArgument},
	}
	for _, tt := range tests {
		n, err := BlockCount(tt.nTokens, tt.blockSize, tt.eagle)
		assert.Equal(t, tt.status, StatusOf(err), "%+v: %v", tt, err)
		assert.Equal(t, tt.want, n, "%+v", tt)
	}
}

func TestSeedAndVersions(t *testing.T) {
	assert.Equal(t, core.BaseSeed, Seed("", ""))
	assert.Equal(t, core.Seed("my-lora", "tenant"), Seed("my-lora", "tenant"))
	assert.Equal(t, "v1", SpecVersion())
	assert.Equal(t, core.Version, Version())
}

func TestMMHashCount(t *testing.T) {
	assert.Equal(t, uint64(0), MMHashCount(nil))
	assert.Equal(t, uint64(3), MMHashCount([]uint32{1, 0, 2}))
	assert.Equal(t, uint64(2*math.MaxUint32), MMHashCount([]uint32{math.MaxUint32, math.MaxUint32}), "no uint32 wrap")
}

// The hashing path is what callers cross the ABI for by the million: with
// the caller's buffer it must not allocate.
func TestHashingDoesNotAllocate(t *testing.T) {
	tokens := make([]uint32, 4096)
	out := make([]uint64, 256)
	seq := make([]uint64, 256)
	allocs := testing.AllocsPerRun(50, func() {
		n, err := BlockHashes(HashInput{tokens, 16, "", "", false, nil, nil}, out)
		if err != nil || n != 256 {
			panic("unexpected result")
		}
		if _, err := SequenceHashes(out, seq); err != nil {
			panic(err)
		}
		if n, err := BlockAndSequenceHashes(HashInput{tokens, 16, "", "", false, nil, nil}, out, seq); err != nil || n != 256 {
			panic("unexpected fused result")
		}
		var a Args
		_ = View(&a, &tokens[0], uint64(len(tokens)), "tokens")
	})
	assert.Zero(t, allocs)
}

func TestCheckMMCounts(t *testing.T) {
	tests := []struct {
		name      string
		counts    []uint32
		blockSize int
		eagle     bool
		ok        bool
	}{
		{"none", nil, 4, false, true},
		{"small", []uint32{0, 3, 1}, 4, false, true},
		{"more than tokens but under the floor", []uint32{100}, 4, false, true},
		{"the floor", []uint32{maxMMPerBlock}, 4, false, true},
		{"past the floor", []uint32{0, maxMMPerBlock + 1}, 4, false, false},
		{"one a token in a large block", []uint32{200_000}, 200_000, false, true},
		{"eagle window", []uint32{200_001}, 200_000, true, true},
		{"past the eagle window", []uint32{200_002}, 200_000, true, false},
		{"u32 max", []uint32{math.MaxUint32}, 16, false, false},
	}
	for _, tt := range tests {
		err := checkMMCounts(tt.counts, tt.blockSize, tt.eagle)
		if tt.ok {
			assert.NoError(t, err, tt.name)
			continue
		}
		assert.Equal(t, StatusInvalidArgument, StatusOf(err), tt.name)
		assert.Contains(t, Message(err), "mm_counts must count the values in mm_hashes", tt.name)
	}
}

// One buffer passed as both outputs (or two that overlap) is refused: the
// caller would otherwise read local hashes where it expects sequence ones.
func TestBlockAndSequenceHashesOverlappingOutputs(t *testing.T) {
	buf := filled(6)
	cases := []struct {
		name       string
		local, seq []uint64
	}{
		{"same buffer", buf[:3], buf[:3]},
		{"sequence starts inside local", buf[:3], buf[2:5]},
		{"local starts inside sequence", buf[1:4], buf[:3]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := BlockAndSequenceHashes(HashInput{publicTokens, 4, "", "", false, nil, nil}, tc.local, tc.seq)
			assert.Equal(t, StatusInvalidArgument, StatusOf(err))
			assert.ErrorContains(t, err, "overlap")
		})
	}
	// Adjacent, not overlapping: fine.
	n, err := BlockAndSequenceHashes(HashInput{publicTokens, 4, "", "", false, nil, nil}, buf[:3], buf[3:6])
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	assert.Equal(t, publicLocal, buf[:3])
}
