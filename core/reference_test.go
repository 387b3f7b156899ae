package core

import (
	"encoding/binary"
	"slices"

	"github.com/zeebo/xxh3"
)

// referenceBlockHashes is the plain reading of the spec: build each
// block's bytes one value at a time and hand them to the general XXH3.
// It shares nothing with the fast paths it checks.
func referenceBlockHashes(tokens []uint32, blockSize int, opts Options) []uint64 {
	seed := uint64(1337)
	if opts.LoraName != "" {
		seed += xxh3.HashString(opts.LoraName)
	}
	if opts.CacheNamespace != "" {
		seed += xxh3.HashStringSeed(opts.CacheNamespace, 1)
	}
	window, count := blockSize, len(tokens)/blockSize
	if opts.Eagle {
		window++
		count = 0
		if len(tokens) > 0 {
			count = (len(tokens) - 1) / blockSize
		}
	}
	var out []uint64
	for i := 0; i < count; i++ {
		var b []byte
		for _, t := range tokens[i*blockSize : i*blockSize+window] {
			b = binary.LittleEndian.AppendUint32(b, t)
		}
		if i < len(opts.MMHashes) {
			mm := slices.Clone(opts.MMHashes[i])
			slices.Sort(mm)
			for _, h := range mm {
				b = binary.LittleEndian.AppendUint64(b, h)
			}
		}
		out = append(out, xxh3.HashSeed(b, seed))
	}
	return out
}

func referenceChainStep(parent, local uint64) uint64 {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], parent)
	binary.LittleEndian.PutUint64(b[8:], local)
	return xxh3.HashSeed(b[:], 1337)
}

// withPortablePath runs f with the byte-order-independent path forced, as
// on a big-endian host.
func withPortablePath(f func()) {
	saved := hostLittleEndian
	hostLittleEndian = false
	defer func() { hostLittleEndian = saved }()
	f()
}
