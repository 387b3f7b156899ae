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

// pickler writes one pickle into buf. The memo only needs the singleton
// strings and bytes (everything else is pickled once), so it is a short list.
type pickler struct {
	buf        []byte
	frameStart int // index of the current frame's reserved header
	memoLen    uint32
	singles    []singleton // singletons pickled so far (rare: a short list)
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

func (p *pickler) begin(dst []byte) {
	p.buf = append(dst, pkProto, 5)
	p.frameStart = len(p.buf)
	p.buf = append(p.buf, make([]byte, pickleFrameHeader)...)
}

// commitFrame writes the current frame's header, or removes the reserved
// header when the frame is too small to be worth one (CPython's rule).
func (p *pickler) commitFrame() {
	size := len(p.buf) - p.frameStart - pickleFrameHeader
	if size >= pickleFrameMin {
		p.buf[p.frameStart] = pkFrame
		binary.LittleEndian.PutUint64(p.buf[p.frameStart+1:], uint64(size))
		return
	}
	copy(p.buf[p.frameStart:], p.buf[p.frameStart+pickleFrameHeader:])
	p.buf = p.buf[:len(p.buf)-pickleFrameHeader]
}

// boundary runs after every pickled object, as the C pickler's save() does.
func (p *pickler) boundary() {
	if len(p.buf)-p.frameStart-pickleFrameHeader >= pickleFrameTarget {
		p.commitFrame()
		p.frameStart = len(p.buf)
		p.buf = append(p.buf, make([]byte, pickleFrameHeader)...)
	}
}

func (p *pickler) end() []byte {
	p.buf = append(p.buf, pkStop)
	p.commitFrame()
	return p.buf
}

func (p *pickler) memoize() {
	p.buf = append(p.buf, pkMemoize)
	p.memoLen++
}

func (p *pickler) get(idx uint32) {
	if idx < 256 {
		p.buf = append(p.buf, pkBinGet, byte(idx))
	} else {
		p.buf = append(p.buf, pkLongBinGet)
		p.buf = binary.LittleEndian.AppendUint32(p.buf, idx)
	}
}

func (p *pickler) none() {
	p.buf = append(p.buf, pkNone)
	p.boundary()
}

func (p *pickler) int(v int64) {
	switch {
	case v >= 0 && v <= 0xff:
		p.buf = append(p.buf, pkBinInt1, byte(v))
	case v >= 0 && v <= 0xffff:
		p.buf = append(p.buf, pkBinInt2, byte(v), byte(v>>8))
	case v >= -1<<31 && v < 1<<31:
		p.buf = append(p.buf, pkBinInt)
		p.buf = binary.LittleEndian.AppendUint32(p.buf, uint32(v))
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
		p.buf = append(p.buf, pkLong1, byte(n))
		p.buf = append(p.buf, tmp[:n]...)
	}
	p.boundary()
}

// uint32 pickles a token id: above 2^31-1 it no longer fits BININT and needs
// a 5-byte LONG1 (the sign byte), which int handles.
func (p *pickler) uint32(v uint32) { p.int(int64(v)) }

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

func (p *pickler) str(s string) {
	slot := strSingletonSlot(s)
	if slot >= 0 {
		if idx, ok := p.findSingle(false, slot); ok {
			p.get(idx)
			p.boundary()
			return
		}
	}
	if len(s) < 256 {
		p.buf = append(p.buf, pkShortBinUnicod, byte(len(s)))
	} else {
		p.buf = append(p.buf, pkBinUnicode)
		p.buf = binary.LittleEndian.AppendUint32(p.buf, uint32(len(s)))
	}
	p.buf = append(p.buf, s...)
	p.memoize()
	if slot >= 0 {
		p.singles = append(p.singles, singleton{slot: slot, memo: p.memoLen - 1})
	}
	p.boundary()
}

func (p *pickler) bytes(b []byte) {
	slot := -1
	switch len(b) {
	case 0:
		slot = 256
	case 1:
		slot = int(b[0])
	}
	if slot >= 0 {
		if idx, ok := p.findSingle(true, slot); ok {
			p.get(idx)
			p.boundary()
			return
		}
	}
	if len(b) < 256 {
		p.buf = append(p.buf, pkShortBinBytes, byte(len(b)))
	} else {
		p.buf = append(p.buf, pkBinBytes)
		p.buf = binary.LittleEndian.AppendUint32(p.buf, uint32(len(b)))
	}
	p.buf = append(p.buf, b...)
	p.memoize()
	if slot >= 0 {
		p.singles = append(p.singles, singleton{isBytes: true, slot: slot, memo: p.memoLen - 1})
	}
	p.boundary()
}

// tupleOpen starts a tuple of n items; tupleClose ends it after the items.
func (p *pickler) tupleOpen(n int) {
	if n > 3 {
		p.buf = append(p.buf, pkMark)
	}
}

func (p *pickler) tupleClose(n int) {
	switch n {
	case 0:
		p.buf = append(p.buf, pkEmptyTuple)
		p.boundary()
		return
	case 1:
		p.buf = append(p.buf, pkTuple1)
	case 2:
		p.buf = append(p.buf, pkTuple2)
	case 3:
		p.buf = append(p.buf, pkTuple3)
	default:
		p.buf = append(p.buf, pkTuple)
	}
	p.memoize()
	p.boundary()
}

// appendPickleBlock pickles (parent, tuple(tokens), tuple(extra) or None).
func appendPickleBlock(dst []byte, parent []byte, tokens []uint32, extra []ExtraKey) []byte {
	var p pickler
	p.begin(dst)
	p.tupleOpen(3)
	p.bytes(parent)
	p.tupleOpen(len(tokens))
	for _, t := range tokens {
		p.uint32(t)
	}
	p.tupleClose(len(tokens))
	if len(extra) == 0 {
		p.none()
	} else {
		p.tupleOpen(len(extra))
		for _, k := range extra {
			switch k.Kind {
			case ExtraString:
				p.str(k.Text)
			case ExtraMM:
				p.tupleOpen(2)
				p.str(k.Text)
				p.int(k.Offset)
				p.tupleClose(2)
			case ExtraBytes:
				p.bytes(k.Bytes)
			}
		}
		p.tupleClose(len(extra))
	}
	p.tupleClose(3)
	return p.end()
}

// appendPickleString pickles a lone str (vLLM's NONE_HASH input).
func appendPickleString(dst []byte, s string) []byte {
	var p pickler
	p.begin(dst)
	p.str(s)
	return p.end()
}
