//go:build !purego

package core

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWithoutAVX2 runs the public hashing entry points as an amd64 CPU
// without AVX2 would, and requires the same hashes as the AVX2 loops for
// every block size that has one.
func TestWithoutAVX2(t *testing.T) {
	if !useAVX2 {
		t.Skip("this CPU has no AVX2: every test runs the portable loops")
	}
	rng := rand.New(rand.NewPCG(21, 22))
	tokens := randomTokens(rng, 3000)
	cases := []struct {
		blockSize int
		opts      Options
	}{
		{16, Options{}},
		{16, Options{LoraName: "adapter-a"}},
		{15, Options{Eagle: true}},
		{64, Options{}},
		{64, Options{CacheNamespace: "tenant-7"}},
		{63, Options{Eagle: true}},
	}
	type result struct{ local, seq []uint64 }
	withAVX2 := make([]result, len(cases))
	for i, c := range cases {
		local, seq, err := AppendBlockAndSequenceHashes(nil, nil, tokens, c.blockSize, c.opts)
		require.NoError(t, err)
		withAVX2[i] = result{local, seq}
	}
	useAVX2 = false
	t.Cleanup(func() { useAVX2 = true })
	for i, c := range cases {
		name := fmt.Sprintf("block size %d, options %+v", c.blockSize, c.opts)
		local, seq, err := AppendBlockAndSequenceHashes(nil, nil, tokens, c.blockSize, c.opts)
		require.NoError(t, err, name)
		require.Equal(t, withAVX2[i].local, local, name)
		require.Equal(t, withAVX2[i].seq, seq, name)
		blocksOnly, err := BlockHashes(tokens, c.blockSize, c.opts)
		require.NoError(t, err, name)
		require.Equal(t, withAVX2[i].local, blocksOnly, name)
	}
}
