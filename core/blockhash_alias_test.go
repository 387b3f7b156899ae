package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// AppendBlockAndSequenceHashes with local and seq sharing one backing
// array (issue 10, item 9): both results must be what separate slices give,
// and the elements already in seq must be kept.
func TestAppendBlockAndSequenceHashesSharedMemory(t *testing.T) {
	tokens := make([]uint32, 64*9+3)
	for i := range tokens {
		tokens[i] = uint32(i*2654435761) >> 7
	}
	tests := []struct {
		name      string
		blockSize int
		opts      Options
		// the two slices handed in, cut from one array of 256
		local, seq func(buf []uint64) []uint64
	}{
		{"same slice, 16-token vector loop", 16, Options{}, func(b []uint64) []uint64 { return b[:0] }, func(b []uint64) []uint64 { return b[:0] }},
		{"same slice, 64-token long path", 64, Options{}, func(b []uint64) []uint64 { return b[:0] }, func(b []uint64) []uint64 { return b[:0] }},
		{"same slice, generic path", 5, Options{LoraName: "a"}, func(b []uint64) []uint64 { return b[:0] }, func(b []uint64) []uint64 { return b[:0] }},
		{"same slice, eagle", 15, Options{Eagle: true}, func(b []uint64) []uint64 { return b[:0] }, func(b []uint64) []uint64 { return b[:0] }},
		{"same slice, multimodal", 16, Options{MMHashes: [][]uint64{{7}, nil, {9, 8}}}, func(b []uint64) []uint64 { return b[:0] }, func(b []uint64) []uint64 { return b[:0] }},
		{"seq has elements local would overwrite", 16, Options{}, func(b []uint64) []uint64 { return b[:0] }, func(b []uint64) []uint64 { return b[:2] }},
		{"local ahead of seq in the array", 16, Options{}, func(b []uint64) []uint64 { return b[3:3] }, func(b []uint64) []uint64 { return b[:1] }},
		{"seq inside local's new elements", 4, Options{}, func(b []uint64) []uint64 { return b[:1] }, func(b []uint64) []uint64 { return b[10:10] }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf := make([]uint64, 256)
			for i := range buf {
				buf[i] = uint64(1000 + i)
			}
			local, seq := tt.local(buf), tt.seq(buf)
			oldLocal, oldSeq := append([]uint64(nil), local...), append([]uint64(nil), seq...)

			wantLocal, err := BlockHashes(tokens, tt.blockSize, tt.opts)
			require.NoError(t, err)
			require.NotEmpty(t, wantLocal)
			wantSeq := SequenceHashes(wantLocal)

			gotLocal, gotSeq, err := AppendBlockAndSequenceHashes(local, seq, tokens, tt.blockSize, tt.opts)
			require.NoError(t, err)
			assert.Equal(t, append(oldLocal, wantLocal...), gotLocal, "local hashes")
			assert.Equal(t, append(oldSeq, wantSeq...), gotSeq, "sequence hashes")
			assert.False(t, overlap(gotLocal, gotSeq), "the results share no memory")
		})
	}
}

// Separate slices with room are still filled in place (no allocation).
func TestAppendBlockAndSequenceHashesSeparateKeepsArrays(t *testing.T) {
	tokens := make([]uint32, 64)
	local, seq := make([]uint64, 0, 8), make([]uint64, 0, 8)
	gotLocal, gotSeq, err := AppendBlockAndSequenceHashes(local, seq, tokens, 16, Options{})
	require.NoError(t, err)
	require.Len(t, gotSeq, 4)
	assert.Same(t, &local[:1][0], &gotLocal[0])
	assert.Same(t, &seq[:1][0], &gotSeq[0])
}

func TestOverlap(t *testing.T) {
	buf := make([]uint64, 10)
	assert.True(t, overlap(buf[2:5], buf[4:6]))
	assert.True(t, overlap(buf[4:6], buf[2:5]))
	assert.False(t, overlap(buf[2:4], buf[4:6]))
	assert.False(t, overlap(buf[:0], buf))
	assert.False(t, overlap(buf, make([]uint64, 3)))
}
