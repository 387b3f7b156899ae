package core

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// ErrDecode is wrapped by every error of DecodeEvent and DecodeRouterEvent:
// the input is not JSON, or not an event. The message names the field.
var ErrDecode = errors.New("decode event")

// maxNesting bounds how deep the scanner follows unknown fields' values,
// so hostile input cannot exhaust the stack.
const maxNesting = 512

// scanner is a small JSON reader over a byte slice: just enough to read
// events exactly (u64 values stay integers, never float64) and to skip
// any unknown field while still checking that it is valid JSON.
type scanner struct {
	data []byte
	pos  int
	// into, when set, is memory to decode an event's lists and optional
	// numbers into instead of allocating (Index.ApplyJSON).
	into *eventMemory
	// path is the stack of members and indexes being read, rendered only
	// when an error names the field ("data.stored.blocks[2].block_hash").
	path  [12]segment
	depth int
}

type segment struct {
	name  string // a member name, or "" for an index
	index int
}

func (s *scanner) push(name string) {
	if s.depth < len(s.path) {
		s.path[s.depth] = segment{name: name}
	}
	s.depth++
}

func (s *scanner) pushIndex(i int) {
	if s.depth < len(s.path) {
		s.path[s.depth] = segment{index: i}
	}
	s.depth++
}

func (s *scanner) pop() { s.depth-- }

func (s *scanner) pathString() string {
	var b []byte
	for i := range min(s.depth, len(s.path)) {
		seg := s.path[i]
		switch {
		case seg.name == "":
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(seg.index), 10)
			b = append(b, ']')
		case i > 0:
			b = append(b, '.')
			fallthrough
		default:
			b = append(b, seg.name...)
		}
	}
	return string(b)
}

// fail returns a decode error naming the field being read.
func (s *scanner) fail(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if s.depth == 0 {
		return fmt.Errorf("%w: %s", ErrDecode, msg)
	}
	return fmt.Errorf("%w: %s: %s", ErrDecode, s.pathString(), msg)
}

func (s *scanner) skipSpace() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end of input.
func (s *scanner) peek() byte {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

// unexpected describes what stands at the current position.
func (s *scanner) unexpected(want string) error {
	if s.pos >= len(s.data) {
		return s.fail("unexpected end of input, want %s", want)
	}
	return s.fail("unexpected %q at offset %d, want %s", s.data[s.pos], s.pos, want)
}

// consume skips the byte c (after spaces) or fails.
func (s *scanner) consume(c byte) error {
	if s.peek() != c {
		return s.unexpected(fmt.Sprintf("%q", c))
	}
	s.pos++
	return nil
}

// end checks that nothing but JSON whitespace follows the value. It tests
// the position, not peek's 0: a NUL byte in the input is data, not its end.
func (s *scanner) end() error {
	s.skipSpace()
	if s.pos < len(s.data) {
		return s.fail("unexpected %q at offset %d after the event", s.data[s.pos], s.pos)
	}
	return nil
}

// null consumes a JSON null if one comes next and reports whether it did.
func (s *scanner) null() (bool, error) {
	if s.peek() != 'n' {
		return false, nil
	}
	if err := s.literal("null"); err != nil {
		return false, err
	}
	return true, nil
}

func (s *scanner) literal(lit string) error {
	if len(s.data)-s.pos < len(lit) || string(s.data[s.pos:s.pos+len(lit)]) != lit {
		return s.unexpected(lit)
	}
	s.pos += len(lit)
	return nil
}

// errUnknownMember is what an object's member callback returns for a key
// it does not know: object then skips the value. It never leaves the
// scanner.
var errUnknownMember = errors.New("unknown member")

// object reads an object, calling member with each key once the scanner
// stands at the member's value. member reads the value (naming the member
// on the path itself: some readers name it only after a null check), or
// returns errUnknownMember to have it skipped; errors in a skipped value
// are named by the object's path, as the member is not ours to name.
func (s *scanner) object(member func(key []byte) error) error {
	if s.peek() != '{' {
		return s.unexpected("an object")
	}
	s.pos++
	for first := true; ; first = false {
		key, done, err := s.nextKey(first)
		if err != nil || done {
			return err
		}
		if err := member(key); err != nil {
			if !errors.Is(err, errUnknownMember) {
				return err
			}
			if err := s.skip(1); err != nil {
				return err
			}
		}
	}
}

// nextKey reads the next member's key and its colon. first says whether
// this is the first call for the object; done is true at the closing '}'.
func (s *scanner) nextKey(first bool) (key []byte, done bool, err error) {
	c := s.peek()
	if c == '}' {
		s.pos++
		return nil, true, nil
	}
	if !first {
		if c != ',' {
			return nil, false, s.unexpected("',' or '}'")
		}
		s.pos++
		if s.peek() != '"' {
			return nil, false, s.unexpected("a member name")
		}
	} else if c != '"' {
		return nil, false, s.unexpected("a member name or '}'")
	}
	key, err = s.str()
	if err != nil {
		return nil, false, err
	}
	if err := s.consume(':'); err != nil {
		return nil, false, err
	}
	return key, false, nil
}

// array reads an array, calling elem for each element with its index on
// the path, so errors name it ("blocks[2]").
func (s *scanner) array(elem func(i int) error) error {
	return s.elements(true, elem)
}

// elements is the one array loop. named says whether the index goes on
// the path while elem runs: skip passes false, because errors inside an
// unknown member's value have always been named by the enclosing object.
func (s *scanner) elements(named bool, elem func(i int) error) error {
	if s.peek() != '[' {
		return s.unexpected("an array")
	}
	s.pos++
	for i := 0; ; i++ {
		more, err := s.nextElem(i == 0)
		if err != nil || !more {
			return err
		}
		if named {
			s.pushIndex(i)
		}
		err = elem(i)
		if named {
			s.pop()
		}
		if err != nil {
			return err
		}
	}
}

// nextElem reports whether another element follows (consuming the comma
// before it) or the array ends (consuming ']').
func (s *scanner) nextElem(first bool) (more bool, err error) {
	c := s.peek()
	if c == ']' {
		s.pos++
		return false, nil
	}
	if first {
		return true, nil
	}
	if c != ',' {
		return false, s.unexpected("',' or ']'")
	}
	s.pos++
	if s.peek() == ']' {
		return false, s.unexpected("a value")
	}
	return true, nil
}

// str reads a string and returns its unescaped bytes. Without escapes the
// result aliases the input.
func (s *scanner) str() ([]byte, error) {
	if s.peek() != '"' {
		return nil, s.unexpected("a string")
	}
	s.pos++
	start := s.pos
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			raw := s.data[start:s.pos]
			s.pos++
			if !utf8.Valid(raw) {
				return nil, s.fail("string is not valid UTF-8")
			}
			return raw, nil
		case c == '\\':
			return s.strEscaped(start)
		case c < 0x20:
			return nil, s.fail("control character in string at offset %d", s.pos)
		}
		s.pos++
	}
	return nil, s.fail("unterminated string")
}

// strEscaped finishes a string that holds escapes, copying it.
func (s *scanner) strEscaped(start int) ([]byte, error) {
	out := append([]byte(nil), s.data[start:s.pos]...)
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			if !utf8.Valid(out) {
				return nil, s.fail("string is not valid UTF-8")
			}
			return out, nil
		case c < 0x20:
			return nil, s.fail("control character in string at offset %d", s.pos)
		case c != '\\':
			out = append(out, c)
			s.pos++
			continue
		}
		if s.pos+1 >= len(s.data) {
			break
		}
		e := s.data[s.pos+1]
		s.pos += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, err := s.hex4()
			if err != nil {
				return nil, err
			}
			if r >= 0xD800 && r < 0xDC00 {
				// A high surrogate must pair with a low one.
				if s.pos+1 < len(s.data) && s.data[s.pos] == '\\' && s.data[s.pos+1] == 'u' {
					s.pos += 2
					lo, err := s.hex4()
					if err != nil {
						return nil, err
					}
					if lo >= 0xDC00 && lo < 0xE000 {
						r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
					} else {
						out = utf8.AppendRune(out, utf8.RuneError)
						r = lo
					}
				} else {
					r = utf8.RuneError
				}
			} else if r >= 0xDC00 && r < 0xE000 {
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, s.fail("invalid escape '\\%c' in string", e)
		}
	}
	return nil, s.fail("unterminated string")
}

func (s *scanner) hex4() (rune, error) {
	if len(s.data)-s.pos < 4 {
		return 0, s.fail("short \\u escape in string")
	}
	var r rune
	for _, c := range s.data[s.pos : s.pos+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, s.fail("invalid \\u escape in string")
		}
	}
	s.pos += 4
	return r, nil
}

// number scans one JSON number and returns its text and whether it is a
// plain non-negative integer (no sign, fraction or exponent).
func (s *scanner) number() (text []byte, integer bool, err error) {
	s.skipSpace()
	start := s.pos
	integer = true
	digits := func() int {
		n := 0
		for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
			s.pos++
			n++
		}
		return n
	}
	if s.pos < len(s.data) && s.data[s.pos] == '-' {
		s.pos++
		integer = false
	}
	intStart := s.pos
	if n := digits(); n == 0 {
		s.pos = start
		return nil, false, s.unexpected("a number")
	} else if n > 1 && s.data[intStart] == '0' {
		return nil, false, s.fail("number has a leading zero")
	}
	if s.pos < len(s.data) && s.data[s.pos] == '.' {
		s.pos++
		integer = false
		if digits() == 0 {
			return nil, false, s.fail("number has no digits after '.'")
		}
	}
	if s.pos < len(s.data) && (s.data[s.pos] == 'e' || s.data[s.pos] == 'E') {
		s.pos++
		integer = false
		if s.pos < len(s.data) && (s.data[s.pos] == '+' || s.data[s.pos] == '-') {
			s.pos++
		}
		if digits() == 0 {
			return nil, false, s.fail("number has no exponent digits")
		}
	}
	return s.data[start:s.pos], integer, nil
}

// uint64 reads a JSON integer in [0, 2^64-1] exactly.
func (s *scanner) uint64() (uint64, error) {
	if v, ok := s.plainUint64(); ok {
		return v, nil
	}
	c := s.peek()
	if c != '-' && (c < '0' || c > '9') {
		return 0, s.unexpected("an unsigned integer")
	}
	text, integer, err := s.number()
	if err != nil {
		return 0, err
	}
	if !integer {
		if text[0] == '-' {
			return 0, s.fail("%s is negative, want an unsigned 64-bit integer", text)
		}
		return 0, s.fail("%s is not an integer", text)
	}
	var v uint64
	for _, d := range text {
		digit := uint64(d - '0')
		if v > (math.MaxUint64-digit)/10 {
			return 0, s.fail("%s exceeds 2^64-1", text)
		}
		v = v*10 + digit
	}
	return v, nil
}

// plainUint64 reads the common case, a run of digits that is a valid
// u64 and not followed by a fraction or an exponent, in one pass with one
// multiply-add a digit (the general path validates the number first, then
// converts it checking overflow with a division a digit: most of the time
// of decoding an event). Anything else (a sign, a leading zero, a
// fraction, an exponent, an overflow) returns false without consuming
// anything, for the general path to read or to word the error.
func (s *scanner) plainUint64() (uint64, bool) {
	s.skipSpace()
	data, p := s.data, s.pos
	if p >= len(data) || data[p] < '0' || data[p] > '9' {
		return 0, false
	}
	if data[p] == '0' {
		if p+1 < len(data) && data[p+1] >= '0' && data[p+1] <= '9' {
			return 0, false // leading zero
		}
	}
	var v uint64
	n := 0
	// Eight digits at a time while at least eight more follow and the
	// result stays within 16 digits (no overflow possible): a hash has
	// 19-20 digits, two words and a few single steps.
	for n <= 8 && p+8 <= len(data) {
		w := binary.LittleEndian.Uint64(data[p:])
		if !eightDigits(w) {
			break
		}
		v = v*100_000_000 + eightDigitsValue(w)
		p += 8
		n += 8
	}
	for ; p < len(data); p++ {
		d := data[p] - '0'
		if d > 9 {
			break
		}
		if n == 19 {
			// A 20th digit: the product may overflow (2^64-1 is
			// 18446744073709551615); a 21st always does.
			const maxDiv10, maxMod10 = math.MaxUint64 / 10, math.MaxUint64 % 10
			if v > maxDiv10 || v == maxDiv10 && uint64(d) > maxMod10 ||
				p+1 < len(data) && data[p+1] >= '0' && data[p+1] <= '9' {
				return 0, false
			}
		}
		v = v*10 + uint64(d)
		n++
	}
	if p < len(data) && (data[p] == '.' || data[p] == 'e' || data[p] == 'E') {
		return 0, false
	}
	s.pos = p
	return v, true
}

// eightDigits reports whether the eight bytes of w (little-endian) are
// all ASCII digits: each byte's high nibble is 3 and adding 6 to it does
// not carry into the high nibble.
func eightDigits(w uint64) bool {
	return (w&0xF0F0F0F0F0F0F0F0)|(((w+0x0606060606060606)&0xF0F0F0F0F0F0F0F0)>>4) == 0x3333333333333333
}

// eightDigitsValue converts eight ASCII digits (little-endian in w, the
// first digit in the low byte) to their value: pairs, then quads, then
// the whole, with three multiplications instead of eight.
func eightDigitsValue(w uint64) uint64 {
	w -= 0x3030303030303030
	w = w*10 + w>>8 // each even byte: a two-digit pair
	return ((w&0x000000FF000000FF)*(100+(1000000<<32)) +
		(w>>16&0x000000FF000000FF)*(1+(10000<<32))) >> 32
}

// uint32 reads a JSON integer in [0, 2^32-1].
func (s *scanner) uint32() (uint32, error) {
	v, err := s.uint64()
	if err != nil {
		return 0, err
	}
	if v > math.MaxUint32 {
		return 0, s.fail("%d exceeds 2^32-1", v)
	}
	return uint32(v), nil
}

// skip consumes any one JSON value, checking its syntax.
func (s *scanner) skip(depth int) error {
	if depth > maxNesting {
		return s.fail("nesting deeper than %d", maxNesting)
	}
	switch c := s.peek(); {
	case c == '{':
		return s.object(func([]byte) error { return s.skip(depth + 1) })
	case c == '[':
		return s.elements(false, func(int) error { return s.skip(depth + 1) })
	case c == '"':
		_, err := s.str()
		return err
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		_, _, err := s.number()
		return err
	}
	return s.unexpected("a value")
}
