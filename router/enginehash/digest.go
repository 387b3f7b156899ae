package enginehash

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// MaxDigestSize is the longest digest any scheme produces (SHA-256).
const MaxDigestSize = 32

// Digest is one block's full digest (32 bytes for SHA-256 schemes, 16 for
// XXH3-128, 8 for TensorRT-LLM v1's 64-bit keys). It is a value type so that chains do not allocate per block.
// The zero Digest is "no digest": SGLang's unsalted root.
type Digest struct {
	n uint8
	b [MaxDigestSize]byte
}

// DigestFromBytes copies b (32 bytes for SHA-256, 16 for XXH3-128, 8 for
// TensorRT-LLM v1 keys) into a Digest.
func DigestFromBytes(b []byte) (Digest, error) {
	var d Digest
	if len(b) != 8 && len(b) != 16 && len(b) != 32 {
		return d, fmt.Errorf("enginehash: a digest is 8, 16 or 32 bytes, got %d", len(b))
	}
	d.n = uint8(copy(d.b[:], b))
	return d, nil
}

// ParseDigestHex decodes a hex digest (as engines log them).
func ParseDigestHex(s string) (Digest, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		return Digest{}, fmt.Errorf("enginehash: digest hex: %w", err)
	}
	return DigestFromBytes(b)
}

// Bytes returns the digest's bytes (empty for the zero Digest).
func (d Digest) Bytes() []byte { return d.b[:d.n] }

// Len is the digest's length in bytes (0 for the zero Digest).
func (d Digest) Len() int { return int(d.n) }

// IsZero reports whether d holds no digest.
func (d Digest) IsZero() bool { return d.n == 0 }

// String is the digest in lower-case hex.
func (d Digest) String() string { return hex.EncodeToString(d.Bytes()) }

// lastU64BE is vLLM's event int: int.from_bytes(digest, "big") & (2**64-1),
// i.e. the last 8 bytes read big-endian.
func (d Digest) lastU64BE() uint64 {
	if d.n < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(d.b[d.n-8 : d.n])
}

// firstU64BE is SGLang's and TensorRT-LLM's event int: the first 8 bytes read
// big-endian (SGLang publishes it as a signed i64; the bits are the same).
func (d Digest) firstU64BE() uint64 {
	if d.n < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(d.b[:8])
}

func sha256Digest(sum [32]byte) Digest {
	return Digest{n: 32, b: sum}
}

func xxh128Digest(sum [16]byte) Digest {
	var d Digest
	d.n = 16
	copy(d.b[:], sum[:])
	return d
}
