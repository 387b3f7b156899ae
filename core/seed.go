package core

import "github.com/zeebo/xxh3"

// Seeds of the terms that options add to BaseSeed. They differ so that a
// LoRA name and a namespace with the same bytes give different seeds.
const (
	loraTermSeed      uint64 = 0
	namespaceTermSeed uint64 = 1
)

// Seed returns the XXH3-64 seed of local block hashes for a LoRA adapter
// name and a cache namespace (tenant salt). An empty string means absent;
// with both absent the seed is BaseSeed. Additions wrap modulo 2^64.
func Seed(loraName, cacheNamespace string) uint64 {
	seed := BaseSeed
	if loraName != "" {
		seed += xxh3.HashStringSeed(loraName, loraTermSeed)
	}
	if cacheNamespace != "" {
		seed += xxh3.HashStringSeed(cacheNamespace, namespaceTermSeed)
	}
	return seed
}

// RawHash is XXH3-64 with BaseSeed over arbitrary bytes. Spec v1 defines
// every hash in terms of it; it is exported for checking implementations
// against the published raw-bytes vector.
func RawHash(b []byte) uint64 {
	return xxh3.HashSeed(b, BaseSeed)
}
