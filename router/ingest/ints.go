package ingest

import (
	"encoding/binary"
	"io"
	"math"

	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// The token and hash lists are nearly all of a payload's bytes: they are
// read straight from the payload slice (one MessagePack int is a code byte
// and 0, 1, 2, 4 or 8 big-endian bytes), then the reader is moved past
// them, instead of two interface calls and a copy per value through
// msgpack's Decoder.

// rawInt reads the MessagePack int at p[i:]: its bits as u64, whether it
// is negative, and the offset after it. ok is false for a non-int code or
// a truncated value.
func rawInt(p []byte, i int) (v uint64, neg bool, next int, ok bool) {
	c := p[i]
	switch {
	case c <= msgpcode.PosFixedNumHigh:
		return uint64(c), false, i + 1, true
	case c >= msgpcode.NegFixedNumLow:
		return uint64(int64(int8(c))), true, i + 1, true
	}
	var n int
	switch c {
	case msgpcode.Uint8, msgpcode.Int8:
		n = 1
	case msgpcode.Uint16, msgpcode.Int16:
		n = 2
	case msgpcode.Uint32, msgpcode.Int32:
		n = 4
	case msgpcode.Uint64, msgpcode.Int64:
		n = 8
	default:
		return 0, false, i, false
	}
	if len(p)-i-1 < n {
		return 0, false, i, false
	}
	b := p[i+1 : i+1+n]
	switch c {
	case msgpcode.Uint8:
		v = uint64(b[0])
	case msgpcode.Uint16:
		v = uint64(binary.BigEndian.Uint16(b))
	case msgpcode.Uint32:
		v = uint64(binary.BigEndian.Uint32(b))
	case msgpcode.Uint64:
		v = binary.BigEndian.Uint64(b)
	case msgpcode.Int8:
		v = uint64(int64(int8(b[0])))
	case msgpcode.Int16:
		v = uint64(int64(int16(binary.BigEndian.Uint16(b))))
	case msgpcode.Int32:
		v = uint64(int64(int32(binary.BigEndian.Uint32(b))))
	case msgpcode.Int64:
		v = binary.BigEndian.Uint64(b)
	}
	return v, int64(v) < 0 && c >= msgpcode.Int8, i + 1 + n, true
}

// pos is the reader's offset in the payload.
func (dec *Decoder) pos() int { return len(dec.payload) - dec.r.Len() }

func (dec *Decoder) seek(i int) { _, _ = dec.r.Seek(int64(i), io.SeekStart) }

// fastTokens reads n token ids; on any value it cannot take (not an int,
// out of u32 range, truncated) it stops and leaves the reader at that
// value, returning how many it read, so the careful path reports it.
func (dec *Decoder) fastTokens(out []uint32) int {
	p, i := dec.payload, dec.pos()
	k := 0
	// While 5 bytes remain, a token is read without branching on its
	// form: vLLM's ids mix uint16 and uint32 codes about evenly (vocabularies
	// of 32k-256k), and a mispredicted branch a token cost more than the
	// rest of the loop. tokenForms says how far a code advances and how to
	// cut the value out of the 4 bytes after it.
	for ; k < len(out) && len(p)-i >= 5; k++ {
		c := p[i]
		f := tokenForms[c]
		if f.adv == 0 {
			break // another form: the loop below decides
		}
		w := binary.BigEndian.Uint32(p[i+1 : i+5])
		out[k] = w>>f.shift | uint32(c&f.fix)
		i += int(f.adv)
	}
	for ; k < len(out) && i < len(p); k++ {
		// Token ids are unsigned and below 2^32: vLLM's and SGLang's
		// encoders pick the smallest of these four forms.
		switch c := p[i]; {
		case c <= msgpcode.PosFixedNumHigh:
			out[k] = uint32(c)
			i++
			continue
		case c == msgpcode.Uint32 && len(p)-i >= 5:
			out[k] = binary.BigEndian.Uint32(p[i+1 : i+5])
			i += 5
			continue
		case c == msgpcode.Uint16 && len(p)-i >= 3:
			out[k] = uint32(binary.BigEndian.Uint16(p[i+1 : i+3]))
			i += 3
			continue
		case c == msgpcode.Uint8 && len(p)-i >= 2:
			out[k] = uint32(p[i+1])
			i += 2
			continue
		}
		v, neg, next, ok := rawInt(p, i)
		if !ok || neg || v > math.MaxUint32 {
			break
		}
		out[k] = uint32(v)
		i = next
	}
	dec.seek(i)
	return k
}

// tokenForm is how a MessagePack code carries a token id: adv bytes in
// all, the value being the 4 bytes after the code shifted right by shift
// (a shift of 32 gives 0), or'ed with the code masked by fix (a positive
// fixint is its own value). adv 0: not a form fastTokens reads.
type tokenForm struct{ adv, shift, fix uint8 }

var tokenForms = func() (t [256]tokenForm) {
	for c := 0; c <= int(msgpcode.PosFixedNumHigh); c++ {
		t[c] = tokenForm{adv: 1, shift: 32, fix: 0xff}
	}
	t[msgpcode.Uint8] = tokenForm{adv: 2, shift: 24}
	t[msgpcode.Uint16] = tokenForm{adv: 3, shift: 16}
	t[msgpcode.Uint32] = tokenForm{adv: 5, shift: 0}
	return t
}()

// fastHashes reads int hashes (bits as u64) until the list ends or a value
// is not an int (bytes: the careful path reads those).
func (dec *Decoder) fastHashes(out []uint64) int {
	p, i := dec.payload, dec.pos()
	k := 0
	for ; k < len(out) && i < len(p); k++ {
		v, _, next, ok := rawInt(p, i)
		if !ok {
			break
		}
		out[k] = v
		i = next
	}
	dec.seek(i)
	return k
}
