package core

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// naivePrefix is commonPrefix's definition, one element at a time.
func naivePrefix(a, b []uint64) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// checkPrefixes requires commonPrefix to agree with naivePrefix on every
// length up to 70 (both loops' steps and tails), with the two slices equal
// or first differing at each position, in the low or the high word half,
// and with the other slice longer or shorter.
func checkPrefixes(t *testing.T) {
	t.Helper()
	for n := 0; n <= 70; n++ {
		a := make([]uint64, n)
		for i := range a {
			a[i] = uint64(i+1) * 0x9E3779B97F4A7C15
		}
		for _, extra := range []int{0, 1, 9} {
			b := append(append([]uint64{}, a...), make([]uint64, extra)...)
			require.Equal(t, n, commonPrefix(a, b), "n=%d, b %d longer", n, extra)
			require.Equal(t, n, commonPrefix(b, a), "n=%d, a %d longer", n, extra)
		}
		for at := 0; at < n; at++ {
			for _, flip := range []uint64{1, 1 << 63} {
				b := append([]uint64{}, a...)
				b[at] ^= flip
				for j := at + 1; j < n; j++ {
					b[j] ^= 1 // later differences must not matter
				}
				require.Equal(t, at, commonPrefix(a, b), "n=%d, first difference at %d", n, at)
				require.Equal(t, at, commonPrefix(b, a), "n=%d, first difference at %d", n, at)
			}
		}
	}
}

func TestCommonPrefix(t *testing.T) { checkPrefixes(t) }

// FuzzCommonPrefix: commonPrefix agrees with the one-at-a-time loop on
// any two slices (the fuzzer's bytes as words, b from a with changes).
func FuzzCommonPrefix(f *testing.F) {
	f.Add(make([]byte, 8*63), uint16(0), uint16(70))
	f.Add(make([]byte, 8*9), uint16(8), uint16(9))
	f.Fuzz(func(t *testing.T, raw []byte, at, blen uint16) {
		a := make([]uint64, len(raw)/8)
		for i := range a {
			a[i] = binary.LittleEndian.Uint64(raw[8*i:])
		}
		b := make([]uint64, int(blen)%100)
		copy(b, a)
		if int(at) < len(b) {
			b[at] ^= uint64(at) + 1
		}
		require.Equal(t, naivePrefix(a, b), commonPrefix(a, b), fmt.Sprintf("a %d, b %d words", len(a), len(b)))
		require.Equal(t, naivePrefix(a, b), CommonPrefix(a, b), "the exported form")
	})
}

// BenchmarkCommonPrefix63 is the compare of a 64-block probe that
// matches a run in full (the first hash is matched by the child lookup).
func BenchmarkCommonPrefix63(b *testing.B) {
	x := make([]uint64, 63)
	for i := range x {
		x[i] = uint64(i+1) * 0x9E3779B97F4A7C15
	}
	y := append([]uint64{}, x...)
	n := 0
	for b.Loop() {
		n += commonPrefix(x, y)
	}
	require.Equal(b, 0, n%63)
}
