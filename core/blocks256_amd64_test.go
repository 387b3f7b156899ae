//go:build !purego

package core

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zeebo/xxh3"
)

// reference256 is what hashBlocks256B must compute: xxh3.HashSeed over
// each 64-token window and ChainStep over all but the last block.
func reference256(n int, tokens []uint32, stride int, seed uint64, withSequence bool) (l, sq []uint64, chain uint64) {
	l = make([]uint64, n)
	if withSequence {
		sq = make([]uint64, n)
	}
	buf := make([]byte, 256)
	for i := range l {
		for j, tok := range tokens[i*stride : i*stride+64] {
			binary.LittleEndian.PutUint32(buf[4*j:], tok)
		}
		l[i] = xxh3.HashSeed(buf, seed)
		if withSequence && i < n-1 {
			if i == 0 {
				chain = l[0]
			} else {
				chain = ChainStep(chain, l[i])
			}
			sq[i] = chain
		}
	}
	return l, sq, chain
}

func checkBlocks256(t *testing.T, n, stride int, seed uint64, withSequence bool, tokens []uint32) {
	t.Helper()
	name := fmt.Sprintf("seed=%d/stride=%d/blocks=%d/sequence=%t", seed, stride, n, withSequence)
	wantL, wantSq, wantChain := reference256(n, tokens, stride, seed, withSequence)
	gotL := make([]uint64, n)
	var gotSq []uint64
	if withSequence {
		gotSq = make([]uint64, n)
	}
	gotChain, ok := hashBlocks256B(gotL, gotSq, tokens, stride, seed)
	require.True(t, ok, name)
	require.Equal(t, wantL, gotL, name)
	require.Equal(t, wantSq, gotSq, name)
	require.Equal(t, wantChain, gotChain, name)
}

// TestAVX2LongLoopMatchesXXH3 holds the 64-token AVX2 loop to
// xxh3.HashSeed and ChainStep: block counts around its first, middle and
// last calls, both strides a 64-token window comes with (64, and 63 for
// EAGLE windows), BaseSeed and derived seeds, token extremes.
func TestAVX2LongLoopMatchesXXH3(t *testing.T) {
	if !useAVX2 {
		t.Skip("this CPU has no AVX2: 64-token blocks go through xxh3.HashSeed")
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for _, seed := range []uint64{BaseSeed, Seed("adapter-a", ""), 0, 1<<64 - 1} {
		for _, stride := range []int{63, 64} {
			for n := 0; n <= 12; n++ {
				for _, withSequence := range []bool{false, true} {
					checkBlocks256(t, n, stride, seed, withSequence, randomTokens(rng, n*stride+64))
				}
			}
		}
	}
	extremes := make([]uint32, 4*64)
	for i := range extremes {
		extremes[i] = []uint32{0, 1 << 31, 1<<32 - 1}[i%3]
	}
	checkBlocks256(t, 4, 64, BaseSeed, true, extremes)
}

func FuzzAVX2LongLoop(f *testing.F) {
	f.Add(uint64(1), uint64(BaseSeed), uint8(5), false)
	f.Add(uint64(2), uint64(0), uint8(1), true)
	f.Fuzz(func(t *testing.T, tokenSeed, seed uint64, blocks uint8, eagle bool) {
		if !useAVX2 {
			t.Skip("no AVX2")
		}
		stride := 64
		if eagle {
			stride = 63
		}
		n := int(blocks % 24)
		tokens := randomTokens(rand.New(rand.NewPCG(tokenSeed, seed)), n*stride+64)
		checkBlocks256(t, n, stride, seed, true, tokens)
		checkBlocks256(t, n, stride, seed, false, tokens)
	})
}
