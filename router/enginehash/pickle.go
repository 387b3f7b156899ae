package enginehash

import "encoding/binary"

// A pickle encoder for exactly the values vLLM's sha256 and xxhash schemes
// hash, producing the bytes of CPython's pickle.dumps(obj, protocol=5) (the
// C pickler, which is what CPython uses). What it reproduces, and why:
//
//   - PROTO 5, then framing: the body is cut into frames, each preceded by
//     FRAME and its 8-byte little-endian length; a frame is closed after the
//     first object whose pickling brings it to 64 KiB or more, and the last
//     frame's header is dropped when it holds fewer than 4 bytes.
//   - Ints: BININT1 (0..255), BININT2 (..65535), BININT (signed 32-bit),
//     else LONG1 with the minimal little-endian two's-complement bytes.
//   - str: SHORT_BINUNICODE (< 256 bytes) or BINUNICODE; bytes:
//     SHORT_BINBYTES or BINBYTES; both are memoized (MEMOIZE).
//   - Tuples: EMPTY_TUPLE, TUPLE1-3, or MARK ... TUPLE; non-empty ones are
//     memoized after their items.
//   - The memo is keyed by object identity. Every value here is a distinct
//     object except CPython's cached singletons: the empty and one-character
//     Latin-1 str, and the empty and one-byte bytes. A repeat of one of those
//     is written as BINGET of its first memo index, as CPython does.
//     (Two equal but distinct longer strings are two objects: no BINGET.)

const (
	pkProto          = 0x80
	pkFrame          = 0x95
	pkStop           = '.'
	pkNone           = 'N'
	pkBinInt         = 'J'
	pkBinInt1        = 'K'
	pkBinInt2        = 'M'
	pkLong1          = 0x8a
	pkShortBinBytes  = 'C'
	pkBinBytes       = 'B'
	pkShortBinUnicod = 0x8c
	pkBinUnicode     = 'X'
	pkEmptyTuple     = ')'
	pkMark           = '('
	pkTuple          = 't'
	pkTuple1         = 0x85
	pkTuple2         = 0x86
	pkTuple3         = 0x87
	pkMemoize        = 0x94
	pkBinGet         = 'h'
	pkLongBinGet     = 'j'

	pickleFrameHeader = 9
	pickleFrameTarget = 64 * 1024
	pickleFrameMin    = 4
)

// pickler is the state of one pickle; the output buffer is passed in and
// returned by every method (not stored here) so that a caller's stack
// buffer does not escape to the heap. The memo only needs the singleton
// strings and bytes (everything else is pickled once): a short list.
type pickler struct {
	frameStart int // index of the current frame's reserved header
	memoLen    uint32
	singles    []singleton // singletons pickled so far (rare: a short list)
	interned   []internedStr
}

// internedStr is one of vLLM's tag constants already in the memo: the same
// object wherever it appears, so CPython pickles its repeats as BINGET.
type internedStr struct {
	s    string
	memo uint32
}

// singleton is a CPython-cached object already in the memo.
type singleton struct {
	isBytes bool
	slot    int // the byte value, or 256 for the empty value
	memo    uint32
}

func (p *pickler) findSingle(isBytes bool, slot int) (uint32, bool) {
	for _, s := range p.singles {
		if s.isBytes == isBytes && s.slot == slot {
			return s.memo, true
		}
	}
	return 0, false
}

func (p *pickler) begin(buf []byte) []byte {
	buf = append(buf, pkProto, 5)
	p.frameStart = len(buf)
	return append(buf, make([]byte, pickleFrameHeader)...)
}

// commitFrame writes the current frame's header, or removes the reserved
// header when the frame is too small to be worth one (CPython's rule).
func (p *pickler) commitFrame(buf []byte) []byte {
	size := len(buf) - p.frameStart - pickleFrameHeader
	if size >= pickleFrameMin {
		buf[p.frameStart] = pkFrame
		binary.LittleEndian.PutUint64(buf[p.frameStart+1:], uint64(size))
		return buf
	}
	copy(buf[p.frameStart:], buf[p.frameStart+pickleFrameHeader:])
	return buf[:len(buf)-pickleFrameHeader]
}

// boundary runs after every pickled object, as the C pickler's save() does.
func (p *pickler) boundary(buf []byte) []byte {
	if len(buf)-p.frameStart-pickleFrameHeader >= pickleFrameTarget {
		buf = p.commitFrame(buf)
		p.frameStart = len(buf)
		buf = append(buf, make([]byte, pickleFrameHeader)...)
	}
	return buf
}

func (p *pickler) end(buf []byte) []byte {
	buf = append(buf, pkStop)
	return p.commitFrame(buf)
}

func (p *pickler) memoize(buf []byte) []byte {
	p.memoLen++
	return append(buf, pkMemoize)
}

func (p *pickler) get(buf []byte, idx uint32) []byte {
	if idx < 256 {
		buf = append(buf, pkBinGet, byte(idx))
	} else {
		buf = append(buf, pkLongBinGet)
		buf = binary.LittleEndian.AppendUint32(buf, idx)
	}
	return buf
}

func (p *pickler) none(buf []byte) []byte {
	return p.boundary(append(buf, pkNone))
}

func (p *pickler) int(buf []byte, v int64) []byte {
	switch {
	case v >= 0 && v <= 0xff:
		buf = append(buf, pkBinInt1, byte(v))
	case v >= 0 && v <= 0xffff:
		buf = append(buf, pkBinInt2, byte(v), byte(v>>8))
	case v >= -1<<31 && v < 1<<31:
		buf = append(buf, pkBinInt)
		buf = binary.LittleEndian.AppendUint32(buf, uint32(v))
	default:
		// LONG1: the fewest little-endian two's-complement bytes that keep
		// the sign (CPython's encode_long).
		var tmp [8]byte
		binary.LittleEndian.PutUint64(tmp[:], uint64(v))
		n := 8
		for n > 1 {
			top, next := tmp[n-1], tmp[n-2]
			if (top == 0 && next&0x80 == 0) || (top == 0xff && next&0x80 != 0) {
				n--
				continue
			}
			break
		}
		buf = append(buf, pkLong1, byte(n))
		buf = append(buf, tmp[:n]...)
	}
	return p.boundary(buf)
}

// uint32 pickles a token id: above 2^31-1 it no longer fits BININT and needs
// a 5-byte LONG1 (the sign byte), which int handles.
func (p *pickler) uint32(buf []byte, v uint32) []byte { return p.int(buf, int64(v)) }

// strSingletonSlot returns the code point of a CPython singleton str (256
// for the empty str), or -1 when s is an ordinary object.
// For str only Latin-1 one-character strings are singletons: in UTF-8 those
// are one byte below 0x80 or two bytes starting 0xc2/0xc3.
func strSingletonSlot(s string) int {
	switch {
	case len(s) == 0:
		return 256
	case len(s) == 1 && s[0] < 0x80:
		return int(s[0])
	case len(s) == 2 && (s[0] == 0xc2 || s[0] == 0xc3) && s[1]&0xc0 == 0x80:
		return int(s[0]&0x03)<<6 | int(s[1]&0x3f)
	}
	return -1
}

func (p *pickler) str(buf []byte, s string) []byte {
	slot := strSingletonSlot(s)
	if slot >= 0 {
		if idx, ok := p.findSingle(false, slot); ok {
			buf = p.get(buf, idx)
			buf = p.boundary(buf)
			return buf
		}
	}
	if len(s) < 256 {
		buf = append(buf, pkShortBinUnicod, byte(len(s)))
	} else {
		buf = append(buf, pkBinUnicode)
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(s)))
	}
	buf = append(buf, s...)
	buf = p.memoize(buf)
	if slot >= 0 {
		p.singles = append(p.singles, singleton{slot: slot, memo: p.memoLen - 1})
	}
	return p.boundary(buf)
}

func (p *pickler) bytes(buf []byte, b []byte) []byte {
	slot := -1
	switch len(b) {
	case 0:
		slot = 256
	case 1:
		slot = int(b[0])
	}
	if slot >= 0 {
		if idx, ok := p.findSingle(true, slot); ok {
			buf = p.get(buf, idx)
			buf = p.boundary(buf)
			return buf
		}
	}
	if len(b) < 256 {
		buf = append(buf, pkShortBinBytes, byte(len(b)))
	} else {
		buf = append(buf, pkBinBytes)
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(b)))
	}
	buf = append(buf, b...)
	buf = p.memoize(buf)
	if slot >= 0 {
		p.singles = append(p.singles, singleton{isBytes: true, slot: slot, memo: p.memoLen - 1})
	}
	return p.boundary(buf)
}

// internedStr pickles one of vLLM's tag constants.
func (p *pickler) internedStr(buf []byte, s string) []byte {
	for _, in := range p.interned {
		if in.s == s {
			return p.boundary(p.get(buf, in.memo))
		}
	}
	buf = p.str(buf, s)
	p.interned = append(p.interned, internedStr{s: s, memo: p.memoLen - 1})
	return buf
}

// tupleOpen starts a tuple of n items; tupleClose ends it after the items.
func (p *pickler) tupleOpen(buf []byte, n int) []byte {
	if n > 3 {
		buf = append(buf, pkMark)
	}
	return buf
}

func (p *pickler) tupleClose(buf []byte, n int) []byte {
	switch n {
	case 0:
		buf = append(buf, pkEmptyTuple)
		buf = p.boundary(buf)
		return buf
	case 1:
		buf = append(buf, pkTuple1)
	case 2:
		buf = append(buf, pkTuple2)
	case 3:
		buf = append(buf, pkTuple3)
	default:
		buf = append(buf, pkTuple)
	}
	buf = p.memoize(buf)
	return p.boundary(buf)
}

// appendPickleBlock pickles (parent, tuple(tokens), keys) where keys is
// tuple(extra) or None, or with lookahead tokens (keys, *lookahead).
func appendPickleBlock(dst []byte, parent []byte, tokens []uint32, extra []ExtraKey, lookahead []uint32) []byte {
	var p pickler
	buf := p.begin(dst)
	buf = p.tupleOpen(buf, 3)
	buf = p.bytes(buf, parent)
	buf = p.tupleOpen(buf, len(tokens))
	for _, t := range tokens {
		buf = p.uint32(buf, t)
	}
	buf = p.tupleClose(buf, len(tokens))
	if len(lookahead) > 0 {
		buf = p.tupleOpen(buf, 1+len(lookahead))
	}
	if len(extra) == 0 {
		buf = p.none(buf)
	} else {
		buf = p.tupleOpen(buf, len(extra))
		for _, k := range extra {
			buf = p.extraKey(buf, k)
		}
		buf = p.tupleClose(buf, len(extra))
	}
	if len(lookahead) > 0 {
		for _, t := range lookahead {
			buf = p.uint32(buf, t)
		}
		buf = p.tupleClose(buf, 1+len(lookahead))
	}
	buf = p.tupleClose(buf, 3)
	return p.end(buf)
}

// extraKey pickles one extra key in its untagged or tagged form.
func (p *pickler) extraKey(buf []byte, k ExtraKey) []byte {
	switch k.Kind {
	case ExtraLoRA:
		if !k.Tagged {
			return p.str(buf, k.Text)
		}
		buf = p.tupleOpen(buf, 3)
		buf = p.internedStr(buf, tagLoRA)
		buf = p.str(buf, k.Text)
		buf = p.str(buf, k.Path)
		return p.tupleClose(buf, 3)
	case ExtraSalt:
		if !k.Tagged {
			return p.str(buf, k.Text)
		}
		buf = p.tupleOpen(buf, 2)
		buf = p.internedStr(buf, tagSalt)
		buf = p.str(buf, k.Text)
		return p.tupleClose(buf, 2)
	case ExtraMM:
		n := 2
		if k.Tagged {
			n = 3
		}
		buf = p.tupleOpen(buf, n)
		if k.Tagged {
			buf = p.internedStr(buf, tagMM)
		}
		buf = p.str(buf, k.Text)
		buf = p.int(buf, k.Offset)
		return p.tupleClose(buf, n)
	case ExtraPromptEmbeds:
		if !k.Tagged {
			return p.bytes(buf, k.Bytes)
		}
		buf = p.tupleOpen(buf, 2)
		buf = p.internedStr(buf, tagPromptEmbeds)
		buf = p.bytes(buf, k.Bytes)
		return p.tupleClose(buf, 2)
	}
	return buf // unreachable: kinds are validated before encoding
}

// appendPickleString pickles a lone str (vLLM's NONE_HASH input).
func appendPickleString(dst []byte, s string) []byte {
	var p pickler
	buf := p.begin(dst)
	buf = p.str(buf, s)
	return p.end(buf)
}
