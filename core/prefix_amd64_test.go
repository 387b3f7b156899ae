//go:build !purego

package core

import "testing"

// TestCommonPrefixWithoutAVX2 runs TestCommonPrefix's cases through the
// portable loop, as an amd64 CPU without AVX2 would (the AVX2 path is
// TestCommonPrefix's on this one).
func TestCommonPrefixWithoutAVX2(t *testing.T) {
	if !useAVX2 {
		t.Skip("this CPU has no AVX2: TestCommonPrefix runs the portable loop")
	}
	useAVX2 = false
	t.Cleanup(func() { useAVX2 = true })
	checkPrefixes(t)
}
