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

// appendCBORBlock encodes (parent, tuple(tokens), keys) where keys is
// tuple(extra) or None, or with lookahead tokens (keys, *lookahead).
func appendCBORBlock(dst []byte, parent []byte, tokens []uint32, extra []ExtraKey, lookahead []uint32) []byte {
	dst = append(dst, cborArray|3)
	dst = appendCBORBytes(dst, parent)
	dst = appendCBORHead(dst, cborArray, uint64(len(tokens)))
	for _, t := range tokens {
		dst = appendCBORHead(dst, cborUint, uint64(t))
	}
	if len(lookahead) > 0 {
		dst = appendCBORHead(dst, cborArray, uint64(1+len(lookahead)))
	}
	if len(extra) == 0 {
		dst = append(dst, cborNull)
	} else {
		dst = appendCBORHead(dst, cborArray, uint64(len(extra)))
		for _, k := range extra {
			dst = appendCBORExtraKey(dst, k)
		}
	}
	for _, t := range lookahead {
		dst = appendCBORHead(dst, cborUint, uint64(t))
	}
	return dst
}

// appendCBORExtraKey encodes one extra key in its untagged or tagged form.
func appendCBORExtraKey(dst []byte, k ExtraKey) []byte {
	switch k.Kind {
	case ExtraLoRA:
		if !k.Tagged {
			return appendCBORText(dst, k.Text)
		}
		dst = append(dst, cborArray|3)
		dst = appendCBORText(dst, tagLoRA)
		dst = appendCBORText(dst, k.Text)
		return appendCBORText(dst, k.Path)
	case ExtraSalt:
		if !k.Tagged {
			return appendCBORText(dst, k.Text)
		}
		dst = append(dst, cborArray|2)
		dst = appendCBORText(dst, tagSalt)
		return appendCBORText(dst, k.Text)
	case ExtraMM:
		if k.Tagged {
			dst = append(dst, cborArray|3)
			dst = appendCBORText(dst, tagMM)
		} else {
			dst = append(dst, cborArray|2)
		}
		dst = appendCBORText(dst, k.Text)
		return appendCBORInt(dst, k.Offset)
	case ExtraPromptEmbeds:
		if !k.Tagged {
			return appendCBORBytes(dst, k.Bytes)
		}
		dst = append(dst, cborArray|2)
		dst = appendCBORText(dst, tagPromptEmbeds)
		return appendCBORBytes(dst, k.Bytes)
	}
	return dst // unreachable: kinds are validated before encoding
}
