package core

import "math/bits"

// Fixed-size XXH3-64 paths for the inputs kvhash hashes most: blocks of
// 3..32 tokens (9..128 bytes) and the 16-byte chain step. (Longer blocks
// go to xxh3.HashSeed, whose vectorised long path a scalar one does not
// beat.) They compute
// exactly what xxh3.HashSeed computes for those lengths (tests and a fuzz
// target prove it bit for bit) but skip its dispatch on length, fold the
// seed into the secret once per call instead of once per block, and read
// the little-endian input words straight from the tokens, so they need no
// byte view and are correct on any host byte order.

const (
	prime64_1 uint64 = 0x9E3779B185EBCA87
	avalanche uint64 = 0x165667919E3779F9
	// len64Acc is the starting accumulator of a 64-byte input, 64*prime64_1
	// wrapped to 64 bits.
	len64Acc = uint64((64 * 0x9E3779B185EBCA87) & (1<<64 - 1))
)

// xxh3Secret is XXH3's default 192-byte secret as little-endian words.
// Inputs of at most 128 bytes use the first 16; longer ones all of it.
var xxh3Secret = [24]uint64{
	0xbe4ba423396cfeb8, 0x1cad21f72c81017c, 0xdb979083e96dd4de, 0x1f67b3b7a4a44072,
	0x78e5c0cc4ee679cb, 0x2172ffcc7dd05a82, 0x8e2443f7744608b8, 0x4c263a81e69035e0,
	0xcb00c391bb52283c, 0xa32e531b8b65d088, 0x4ef90da297486471, 0xd8acdea946ef1938,
	0x3f349ce33f76faa8, 0x1d4f0bc7c7bbdcf9, 0x3159b4cd4be0518a, 0x647378d9c97e9fc8,
	0xc3ebd33483acc5ea, 0xeb6313faffa081c5, 0x49daf0b751dd0d17, 0x9e68d429265516d3,
	0xfca1477d58be162b, 0xce31d07ad1b8f88f, 0x280416958f3acb45, 0x7e404bbbcafbd7af,
}

// seededKeys is the secret with one seed folded in, as the short-input
// paths of XXH3 consume it.
type seededKeys struct {
	mix                [16]uint64 // 17..128 bytes: word 2j + seed, word 2j+1 - seed
	bitflip1, bitflip2 uint64     // 9..16 bytes
}

func newSeededKeys(seed uint64) seededKeys {
	var k seededKeys
	for j := 0; j < 16; j += 2 {
		k.mix[j] = xxh3Secret[j] + seed
		k.mix[j+1] = xxh3Secret[j+1] - seed
	}
	k.bitflip1 = (xxh3Secret[3] ^ xxh3Secret[4]) + seed
	k.bitflip2 = (xxh3Secret[5] ^ xxh3Secret[6]) - seed
	return k
}

// baseKeys serves every hash with BaseSeed: the chain and option-free blocks.
var baseKeys = newSeededKeys(BaseSeed)

func finalize(h uint64) uint64 {
	h ^= h >> 37
	h *= avalanche
	return h ^ h>>32
}

func mulFold(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// hash9to16 is XXH3-64 of an input of 9..16 bytes whose first and last
// eight bytes (overlapping when shorter than 16) read as lo and hi.
func hash9to16(lo, hi uint64, length int, k *seededKeys) uint64 {
	lo ^= k.bitflip1
	hi ^= k.bitflip2
	return finalize(uint64(length) + bits.ReverseBytes64(lo) + hi + mulFold(lo, hi))
}

// hash16 is the chain step's input shape: two whole words.
func hash16(a, b uint64, k *seededKeys) uint64 {
	return hash9to16(a, b, 16, k)
}

// hashTokens17to128 is XXH3-64 of 5..32 tokens (17..128 bytes). Byte
// offsets of the reference algorithm are multiples of 4 for token input,
// so every word it reads is a pair of whole tokens.
func hashTokens17to128(t []uint32, k *seededKeys) uint64 {
	n := len(t)
	length := 4 * n
	acc := uint64(length) * prime64_1
	if length > 32 {
		if length > 64 {
			if length > 96 {
				acc += mulFold(pair(t, 12)^k.mix[12], pair(t, 14)^k.mix[13])
				acc += mulFold(pair(t, n-16)^k.mix[14], pair(t, n-14)^k.mix[15])
			}
			acc += mulFold(pair(t, 8)^k.mix[8], pair(t, 10)^k.mix[9])
			acc += mulFold(pair(t, n-12)^k.mix[10], pair(t, n-10)^k.mix[11])
		}
		acc += mulFold(pair(t, 4)^k.mix[4], pair(t, 6)^k.mix[5])
		acc += mulFold(pair(t, n-8)^k.mix[6], pair(t, n-6)^k.mix[7])
	}
	acc += mulFold(pair(t, 0)^k.mix[0], pair(t, 2)^k.mix[1])
	acc += mulFold(pair(t, n-4)^k.mix[2], pair(t, n-2)^k.mix[3])
	return finalize(acc)
}
