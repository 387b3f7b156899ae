//go:build !purego

package core

// 64-token blocks (256 bytes) take XXH3's long path, which xxh3.HashSeed
// runs with a secret it derives from the seed on every call. With AVX2,
// hashBlocks256 derives it once per prompt and runs the chain beside the
// block hashing, as the 16-token loop does.

// avx2LongKeys is what hashBlocks256 reads; its L_ offsets follow this
// layout.
type avx2LongKeys struct {
	secret   [24]uint64 // XXH3's secret with the seed folded in
	accInit  [8]uint64
	mask32   [4]uint64
	lenAcc   uint64 // 256*prime64_1
	bitflip1 uint64 // the chain's BaseSeed keys
	bitflip2 uint64
	prime    uint64
}

func newAVX2LongKeys(seed uint64) avx2LongKeys {
	k := avx2LongKeys{
		accInit: [8]uint64{
			0x00000000C2B2AE3D, 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
			0x85EBCA77C2B2AE63, 0x0000000085EBCA77, 0x27D4EB2F165667C5, 0x000000009E3779B1,
		},
		lenAcc:   len256Acc,
		bitflip1: baseKeys.bitflip1,
		bitflip2: baseKeys.bitflip2,
		prime:    avalanche,
	}
	for i := 0; i < len(k.secret); i += 2 {
		k.secret[i] = xxh3Secret[i] + seed
		k.secret[i+1] = xxh3Secret[i+1] - seed
	}
	for lane := range k.mask32 {
		k.mask32[lane] = 1<<32 - 1
	}
	return k
}

// len256Acc is 256*prime64_1 wrapped to 64 bits.
const len256Acc = uint64((256 * 0x9E3779B185EBCA87) & (1<<64 - 1))

var avx2BaseLongKeys = newAVX2LongKeys(BaseSeed)

// hashBlocks256 hashes n blocks of 64 tokens, strideBytes apart from
// tokens, into l, and when sq is not nil extends the chain over each of
// them into sq. chainLo is the sequence hash before the first of them
// xored with bitflip1; it returns the same for the last.
//
//go:noescape
func hashBlocks256(l, sq *uint64, tokens *uint32, strideBytes, n uintptr, keys *avx2LongKeys, chainLo uint64) uint64

// hashBlocks256B is hashBlocks64B's counterpart for 64-token windows,
// with the same contract; ok is false where it has no fast path.
func hashBlocks256B(l, sq []uint64, tokens []uint32, stride int, seed uint64) (chain uint64, ok bool) {
	n := len(l)
	if !useAVX2 {
		return 0, false
	}
	if n == 0 {
		return 0, true
	}
	// The assembly trusts its pointers: check every block it will read
	// or write is in bounds before handing them over.
	_ = tokens[(n-1)*stride+63]
	keys := &avx2BaseLongKeys
	if seed != BaseSeed {
		seeded := newAVX2LongKeys(seed)
		keys = &seeded
	}
	strideBytes := uintptr(4 * stride)
	if sq == nil {
		hashBlocks256(&l[0], nil, &tokens[0], strideBytes, uintptr(n), keys, 0)
		return 0, true
	}
	_ = sq[n-1]
	// Block 0 starts the chain and the last block's sequence hash is the
	// caller's: the chain runs over the blocks between.
	hashBlocks256(&l[0], nil, &tokens[0], strideBytes, 1, keys, 0)
	if n == 1 {
		return 0, true
	}
	sq[0] = l[0]
	lo := l[0] ^ baseKeys.bitflip1
	if n > 2 {
		lo = hashBlocks256(&l[1], &sq[1], &tokens[stride], strideBytes, uintptr(n-2), keys, lo)
	}
	hashBlocks256(&l[n-1], nil, &tokens[(n-1)*stride], strideBytes, 1, keys, 0)
	return lo ^ baseKeys.bitflip1, true
}
