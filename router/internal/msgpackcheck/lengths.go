// Package msgpackcheck checks a MessagePack value's declared lengths
// before a reflection-based decoder reads it.
//
// vmihailenco/msgpack v5.4.1 sizes a slice by its array header before it
// reads the elements (its allocation limit never applies: a flag test
// that is always true), so a message of a few dozen bytes declaring an
// array of a billion elements made it allocate and clear gigabytes: 70 s
// for one event-plane load message in the fuzzer, an out-of-memory crash
// on a smaller machine (upstream: vmihailenco/msgpack issue 401, open;
// v5.4.0 and v5.4.1). Lengths walks the value first, without
// allocating, and refuses any length the bytes left cannot hold.
package msgpackcheck

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrLength is what Lengths returns for a value whose declared lengths do
// not fit its bytes, or that is cut short.
var ErrLength = errors.New("msgpack: a declared length exceeds the bytes left")

// Lengths reports whether data begins with one MessagePack value every
// length of which (arrays and maps by their elements, strings, binaries
// and extensions by their bytes) fits in the bytes that follow its
// header, every element taking one byte at least. Bytes after the value
// are not looked at. It allocates nothing and does not recurse.
func Lengths(data []byte) error {
	pending := uint64(1) // values still to read
	i := 0
	for pending > 0 {
		if i >= len(data) {
			return fmt.Errorf("%w: cut short at byte %d", ErrLength, i)
		}
		c := data[i]
		i++
		pending--
		var skip, values uint64 // bytes to skip, values to read after the header
		switch {
		case c <= 0x7f || c >= 0xe0, c == 0xc0, c == 0xc2, c == 0xc3:
			// fixint, nil, false, true: the code is the value
		case c <= 0x8f:
			values = 2 * uint64(c&0x0f) // fixmap
		case c <= 0x9f:
			values = uint64(c & 0x0f) // fixarray
		case c <= 0xbf:
			skip = uint64(c & 0x1f) // fixstr
		case c == 0xc1:
			return fmt.Errorf("%w: the never-used code 0xc1 at byte %d", ErrLength, i-1)
		default:
			size, n, kind, ok := header(c)
			if !ok {
				return fmt.Errorf("%w: code %#x at byte %d", ErrLength, c, i-1)
			}
			if len(data)-i < size {
				return fmt.Errorf("%w: a header cut short at byte %d", ErrLength, i-1)
			}
			if size > 0 {
				n = readUint(data[i : i+size])
			}
			i += size
			switch kind {
			case kindBytes:
				skip = n
			case kindExt:
				skip = n + 1 // its type byte
			case kindFixed:
				skip = n
			case kindArray:
				values = n
			case kindMap:
				values = 2 * n
			}
		}
		left := uint64(len(data) - i)
		if skip > left {
			return fmt.Errorf("%w: %d bytes declared at byte %d, %d left", ErrLength, skip, i, left)
		}
		i += int(skip)
		left -= skip
		if values > left || pending+values > left {
			return fmt.Errorf("%w: %d values declared at byte %d, %d bytes left", ErrLength, pending+values, i, left)
		}
		pending += values
	}
	return nil
}

type kind uint8

const (
	kindFixed kind = iota // n bytes of payload after the code
	kindBytes             // a length of size bytes, then that many bytes
	kindExt               // a length, a type byte, then that many bytes
	kindArray             // a length, then that many values
	kindMap               // a length, then twice that many values
)

// header describes the codes from 0xc4 to 0xdf: how many bytes of length
// follow the code (size; 0 when the payload is fixed, n bytes), and what
// the length counts.
func header(c byte) (size int, n uint64, k kind, ok bool) {
	switch c {
	case 0xc4, 0xd9: // bin8, str8
		return 1, 0, kindBytes, true
	case 0xc5, 0xda: // bin16, str16
		return 2, 0, kindBytes, true
	case 0xc6, 0xdb: // bin32, str32
		return 4, 0, kindBytes, true
	case 0xc7: // ext8
		return 1, 0, kindExt, true
	case 0xc8: // ext16
		return 2, 0, kindExt, true
	case 0xc9: // ext32
		return 4, 0, kindExt, true
	case 0xca, 0xce, 0xd2: // float32, uint32, int32
		return 0, 4, kindFixed, true
	case 0xcb, 0xcf, 0xd3: // float64, uint64, int64
		return 0, 8, kindFixed, true
	case 0xcc, 0xd0: // uint8, int8
		return 0, 1, kindFixed, true
	case 0xcd, 0xd1: // uint16, int16
		return 0, 2, kindFixed, true
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1, 2, 4, 8, 16 (and the type byte)
		return 0, 1 + 1<<(c-0xd4), kindFixed, true
	case 0xdc: // array16
		return 2, 0, kindArray, true
	case 0xdd: // array32
		return 4, 0, kindArray, true
	case 0xde: // map16
		return 2, 0, kindMap, true
	case 0xdf: // map32
		return 4, 0, kindMap, true
	}
	return 0, 0, 0, false
}

func readUint(b []byte) uint64 {
	switch len(b) {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.BigEndian.Uint16(b))
	}
	return uint64(binary.BigEndian.Uint32(b))
}
