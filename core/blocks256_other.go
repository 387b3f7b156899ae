//go:build !amd64 || purego

package core

func hashBlocks256B(l, sq []uint64, tokens []uint32, stride int, seed uint64) (chain uint64, ok bool) {
	return 0, false
}
