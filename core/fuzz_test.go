package core

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzBlockHashes compares the fast paths with the plain byte-by-byte
// reference for any tokens, block size and options.
func FuzzBlockHashes(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0}, 4, "", "", false, uint64(0))
	f.Add(make([]byte, 4*33), 16, "lora", "ns", true, uint64(7))
	f.Add(make([]byte, 4*130), 64, "", "tenant", false, uint64(1)<<63)
	f.Fuzz(func(t *testing.T, raw []byte, blockSize int, lora, ns string, eagle bool, mm uint64) {
		tokens := make([]uint32, len(raw)/4)
		for i := range tokens {
			tokens[i] = binary.LittleEndian.Uint32(raw[4*i:])
		}
		opts := Options{LoraName: lora, CacheNamespace: ns, Eagle: eagle}
		if n, err := BlockCount(len(tokens), blockSize, eagle); err == nil && n > 0 && mm != 0 {
			opts.MMHashes = [][]uint64{{mm, mm >> 1}}
		}
		got, err := BlockHashes(tokens, blockSize, opts)
		if blockSize <= 0 {
			require.ErrorIs(t, err, ErrInvalidArgument)
			return
		}
		require.NoError(t, err)
		require.Equal(t, nonNil(referenceBlockHashes(tokens, blockSize, opts)), nonNil(got))
		var portable []uint64
		withPortablePath(func() { portable, err = BlockHashes(tokens, blockSize, opts) })
		require.NoError(t, err)
		require.Equal(t, got, portable)
	})
}

// FuzzChainStep compares the fixed 16-byte step with general XXH3.
func FuzzChainStep(f *testing.F) {
	f.Add(uint64(0), uint64(0))
	f.Add(uint64(14643705804678351452), uint64(16777012769546811212))
	f.Fuzz(func(t *testing.T, parent, local uint64) {
		require.Equal(t, referenceChainStep(parent, local), ChainStep(parent, local))
	})
}
