//go:build !purego

package core

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAVX2LoopMatchesGo holds the AVX2 loop to the portable one around
// every boundary it has: the scalar first block, whole groups of four,
// the scalar tail that always holds the last block, both strides a
// 16-token window comes with, and the BaseSeed and seeded keys.
func TestAVX2LoopMatchesGo(t *testing.T) {
	if !useAVX2 {
		t.Skip("this CPU has no AVX2: hashBlocks64B is the portable loop")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	seeded := newSeededKeys(Seed("adapter-a", "tenant-7"))
	for _, keys := range []*seededKeys{&baseKeys, &seeded} {
		for _, stride := range []int{15, 16} {
			for n := 0; n <= 40; n++ {
				for _, withSequence := range []bool{false, true} {
					name := fmt.Sprintf("seeded=%t/stride=%d/blocks=%d/sequence=%t", keys != &baseKeys, stride, n, withSequence)
					tokens := randomTokens(rng, n*stride+16)
					wantL, gotL := make([]uint64, n), make([]uint64, n)
					var wantSq, gotSq []uint64
					if withSequence {
						wantSq, gotSq = make([]uint64, n), make([]uint64, n)
					}
					wantChain := hashBlocks64BGo(wantL, wantSq, tokens, stride, keys)
					gotChain := hashBlocks64B(gotL, gotSq, tokens, stride, keys)
					require.Equal(t, wantL, gotL, name)
					require.Equal(t, wantSq, gotSq, name)
					require.Equal(t, wantChain, gotChain, name)
				}
			}
		}
	}
}
