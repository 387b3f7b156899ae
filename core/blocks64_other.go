//go:build (!amd64 && !wasm) || purego

package core

func hashBlocks64B(l, sq []uint64, tokens []uint32, stride int, k *seededKeys) uint64 {
	return hashBlocks64BGo(l, sq, tokens, stride, k)
}
