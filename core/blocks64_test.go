package core

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zeebo/xxh3"
)

// These tests hold hashBlocks64B, whichever loop this architecture runs
// (assembly on amd64 and WebAssembly, hashBlocks64BGo elsewhere), to the
// portable loop and to xxh3.HashSeed with the chain built one step at a
// time.

// blocks64Reference is what hashBlocks64B must compute, from general
// XXH3: l[i] for every block, sq[i] for every block but the last when
// withSequence, and the last chain value set (0 when none is).
func blocks64Reference(n int, tokens []uint32, stride int, seed uint64, withSequence bool) (l, sq []uint64, chain uint64) {
	l = make([]uint64, n)
	var buf [64]byte
	for i := range l {
		for j, tok := range tokens[i*stride : i*stride+16] {
			binary.LittleEndian.PutUint32(buf[4*j:], tok)
		}
		l[i] = xxh3.HashSeed(buf[:], seed)
	}
	if !withSequence {
		return l, nil, 0
	}
	sq = make([]uint64, n)
	for i := 0; i < n-1; i++ {
		if i == 0 {
			chain = l[0]
		} else {
			chain = referenceChainStep(chain, l[i])
		}
		sq[i] = chain
	}
	return l, sq, chain
}

// blocks64Tokens makes the tokens of n blocks at the given stride. The
// adversarial kind picks each 64-bit word so that, xored with its key, it
// becomes a value at the edge of the 128-bit multiply (0, all ones, one
// half all ones, the top bit), where a hand-written product carries.
func blocks64Tokens(rng *rand.Rand, n, stride int, keys *seededKeys, adversarial bool) []uint32 {
	tokens := randomTokens(rng, max(0, (n-1)*stride+16))
	if !adversarial {
		return tokens
	}
	edges := []uint64{0, ^uint64(0), 1 << 63, 0xffffffff, 0xffffffff00000000, 1, 0x8000000080000000}
	// Key j is xored with the word at token keyToken[j] of a block.
	keyToken := [8]int{0, 2, 12, 14, 4, 6, 8, 10}
	for i := 0; i < n; i++ {
		for j, at := range keyToken {
			w := rng.Uint64()
			if rng.IntN(4) > 0 {
				w = edges[rng.IntN(len(edges))] ^ keys.mix[j]
			}
			tokens[i*stride+at] = uint32(w)
			tokens[i*stride+at+1] = uint32(w >> 32)
		}
	}
	return tokens
}

// runBlocks64 runs hashBlocks64B over fresh outputs with a sentinel after
// every element it may write, and checks it left them alone.
func runBlocks64(t *testing.T, n int, tokens []uint32, stride int, keys *seededKeys, withSequence bool) (l, sq []uint64, chain uint64) {
	const sentinel = 0x5eed5eed5eed5eed
	lBuf := make([]uint64, n+1)
	lBuf[n] = sentinel
	l = lBuf[:n:n]
	var sqBuf []uint64
	if withSequence {
		sqBuf = make([]uint64, n+1)
		sqBuf[n] = sentinel
		if n > 0 {
			// The last block's sequence hash is the caller's to set.
			sqBuf[n-1] = sentinel
		}
		sq = sqBuf[:n:n]
	}
	chain = hashBlocks64B(l, sq, tokens, stride, keys)
	require.Equal(t, uint64(sentinel), lBuf[n], "wrote past l")
	if withSequence {
		require.Equal(t, uint64(sentinel), sqBuf[n], "wrote past sq")
		if n > 0 {
			require.Equal(t, uint64(sentinel), sq[n-1], "wrote the last sequence hash")
			sq[n-1] = 0
		}
	}
	return l, sq, chain
}

func TestBlocks64MatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(64, 16))
	seeds := []uint64{BaseSeed, Seed("adapter-a", ""), Seed("adapter-a", "tenant-7"), 0, ^uint64(0)}
	for _, seed := range seeds {
		keys := newSeededKeys(seed)
		// Eagle windows: 16 tokens every 15 (block size 15); plain blocks
		// of 16 every 16.
		for _, stride := range []int{15, 16} {
			for n := 0; n <= 40; n++ {
				for _, withSequence := range []bool{false, true} {
					for _, adversarial := range []bool{false, true} {
						name := fmt.Sprintf("seed=%#x/stride=%d/blocks=%d/sequence=%t/adversarial=%t",
							seed, stride, n, withSequence, adversarial)
						tokens := blocks64Tokens(rng, n, stride, &keys, adversarial)
						wantL, wantSq, wantChain := blocks64Reference(n, tokens, stride, seed, withSequence)

						l, sq, chain := runBlocks64(t, n, tokens, stride, &keys, withSequence)
						require.Equal(t, wantL, l, name)
						require.Equal(t, wantSq, sq, name)
						require.Equal(t, wantChain, chain, name)

						goL := make([]uint64, n)
						var goSq []uint64
						if withSequence {
							goSq = make([]uint64, n)
						}
						goChain := hashBlocks64BGo(goL, goSq, tokens, stride, &keys)
						require.Equal(t, goL, l, name)
						require.Equal(t, goSq, sq, name)
						require.Equal(t, goChain, chain, name)
					}
				}
			}
		}
	}
}

// TestBlocks64PanicsOnShortInput: like the portable loop, the loop
// refuses inputs shorter than its blocks instead of reading past them.
func TestBlocks64PanicsOnShortInput(t *testing.T) {
	tokens := make([]uint32, 3*16)
	for _, tc := range []struct {
		name   string
		l, sq  []uint64
		tokens []uint32
		stride int
	}{
		{"tokens one short", make([]uint64, 3), nil, tokens[: 3*16-1 : 3*16-1], 16},
		{"eagle tokens one short", make([]uint64, 3), nil, tokens[: 2*15+15 : 2*15+15], 15},
		{"sequence one short", make([]uint64, 3), make([]uint64, 1), tokens, 16},
		{"negative stride", make([]uint64, 3), nil, tokens, -1},
		{"stride past the tokens", make([]uint64, 3), nil, tokens, 1 << 62},
	} {
		require.Panics(t, func() { hashBlocks64B(tc.l, tc.sq, tc.tokens, tc.stride, &baseKeys) }, tc.name)
		require.Panics(t, func() { hashBlocks64BGo(tc.l, tc.sq, tc.tokens, tc.stride, &baseKeys) }, tc.name)
	}
}

// FuzzBlocks64 compares hashBlocks64B with the portable loop and with
// general XXH3 for any tokens, stride and seed.
func FuzzBlocks64(f *testing.F) {
	f.Add(make([]byte, 4*16), false, BaseSeed, true)
	f.Add(make([]byte, 4*(3*15+16)), true, Seed("adapter-a", ""), true)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, false, uint64(0), false)
	f.Fuzz(func(t *testing.T, raw []byte, eagle bool, seed uint64, withSequence bool) {
		stride := 16
		if eagle {
			stride = 15
		}
		tokens := make([]uint32, len(raw)/4)
		for i := range tokens {
			tokens[i] = binary.LittleEndian.Uint32(raw[4*i:])
		}
		n := 0
		if len(tokens) >= 16 {
			n = (len(tokens)-16)/stride + 1
		}
		keys := newSeededKeys(seed)
		wantL, wantSq, wantChain := blocks64Reference(n, tokens, stride, seed, withSequence)
		l, sq, chain := runBlocks64(t, n, tokens, stride, &keys, withSequence)
		require.Equal(t, wantL, l)
		require.Equal(t, wantSq, sq)
		require.Equal(t, wantChain, chain)
		goL := make([]uint64, n)
		var goSq []uint64
		if withSequence {
			goSq = make([]uint64, n)
		}
		require.Equal(t, hashBlocks64BGo(goL, goSq, tokens, stride, &keys), chain)
		require.Equal(t, goL, l)
		require.Equal(t, goSq, sq)
	})
}
