package enginehash

// A CBOR encoder for exactly the values vLLM's sha256_cbor hashes, producing
// the bytes cbor2.dumps(obj, canonical=True) does: Python tuples are arrays,
// ints use the shortest head, str is a text string, bytes a byte string, None
// is 0xf6. canonical=True only changes maps, sets and floats, which never
// occur here; token ids are u32, so bignum tags never occur either.

const (
	cborUint  = 0 << 5
	cborNeg   = 1 << 5
	cborBytes = 2 << 5
	cborText  = 3 << 5
	cborArray = 4 << 5
	cborNull  = 0xf6
)

// appendCBORHead appends a major type with its argument in the shortest form.
func appendCBORHead(dst []byte, major byte, n uint64) []byte {
	switch {
	case n < 24:
		return append(dst, major|byte(n))
	case n <= 0xff:
		return append(dst, major|24, byte(n))
	case n <= 0xffff:
		return append(dst, major|25, byte(n>>8), byte(n))
	case n <= 0xffffffff:
		return append(dst, major|26, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	default:
		return append(dst, major|27, byte(n>>56), byte(n>>48), byte(n>>40), byte(n>>32),
			byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
}

func appendCBORInt(dst []byte, v int64) []byte {
	if v >= 0 {
		return appendCBORHead(dst, cborUint, uint64(v))
	}
	return appendCBORHead(dst, cborNeg, uint64(-1-v))
}

func appendCBORText(dst []byte, s string) []byte {
	dst = appendCBORHead(dst, cborText, uint64(len(s)))
	return append(dst, s...)
}

func appendCBORBytes(dst []byte, b []byte) []byte {
	dst = appendCBORHead(dst, cborBytes, uint64(len(b)))
	return append(dst, b...)
}

// appendCBORBlock encodes (parent, tuple(tokens), extra or None).
func appendCBORBlock(dst []byte, parent []byte, tokens []uint32, extra []ExtraKey) []byte {
	dst = append(dst, cborArray|3)
	dst = appendCBORBytes(dst, parent)
	dst = appendCBORHead(dst, cborArray, uint64(len(tokens)))
	for _, t := range tokens {
		dst = appendCBORHead(dst, cborUint, uint64(t))
	}
	if len(extra) == 0 {
		return append(dst, cborNull)
	}
	dst = appendCBORHead(dst, cborArray, uint64(len(extra)))
	for _, k := range extra {
		switch k.Kind {
		case ExtraString:
			dst = appendCBORText(dst, k.Text)
		case ExtraMM:
			dst = append(dst, cborArray|2)
			dst = appendCBORText(dst, k.Text)
			dst = appendCBORInt(dst, k.Offset)
		case ExtraBytes:
			dst = appendCBORBytes(dst, k.Bytes)
		}
	}
	return dst
}
