//go:build !purego

package core

import "unsafe"

// commonPrefix returns how many leading elements a and b share: a match
// compares a query's hashes with a run's this way, 63 of them for most
// 64-block probes. With AVX2 it compares eight a step in vector registers
// (prefix_amd64.s): 63 equal hashes took 34 ns in the portable loop, the
// bulk of a whole 64-block match against a hot tree.
func commonPrefix(a, b []uint64) int {
	n := min(len(a), len(b))
	if n < 8 || !useAVX2 {
		return commonPrefixGo(a[:n], b[:n])
	}
	return commonPrefixAVX2(unsafe.SliceData(a), unsafe.SliceData(b), n)
}

// commonPrefixAVX2 is commonPrefix over a[:n] and b[:n], n >= 8.
//
//go:noescape
func commonPrefixAVX2(a, b *uint64, n int) int
