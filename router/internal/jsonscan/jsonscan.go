// Package jsonscan reads the common shape of large request bodies (a
// top-level object whose bulk is one array of token ids or one long
// value) in a single pass over the bytes, without encoding/json's
// validate-then-decode passes and copies.
//
// Every reader here accepts a subset of what encoding/json accepts and
// reports ok=false for anything else (escapes in keys, odd numbers, deep
// nesting, any syntax error): the caller then decodes the body with
// encoding/json as before, which decides and words the error. So a
// client sees the same answers either way; only the common case is
// faster. The callers' differential fuzz targets hold them to that.
package jsonscan

import (
	"math"
	"unicode/utf8"
)

// maxDepth bounds the nesting ValueEnd follows; deeper values are left to
// encoding/json (whose own limit is 10000).
const maxDepth = 512

// SkipSpace returns the index of the first byte at or after i that is
// not JSON whitespace.
func SkipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// Members walks the object that is the whole of data (whitespace around
// it allowed): for each member it calls member with the key (a string
// without escapes) and the index of the value's first byte; member reads
// the value and returns the index after it, or -1 to give up. Members
// reports whether the object was read to its end with nothing after it.
func Members(data []byte, member func(key []byte, i int) int) bool {
	i := SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = SkipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return SkipSpace(data, i+1) == len(data)
	}
	for {
		key, next, ok := rawString(data, i)
		if !ok {
			return false
		}
		i = SkipSpace(data, next)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		if i = member(key, SkipSpace(data, i+1)); i < 0 {
			return false
		}
		i = SkipSpace(data, i)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i = SkipSpace(data, i+1)
		case '}':
			return SkipSpace(data, i+1) == len(data)
		default:
			return false
		}
	}
}

// MayName reports whether encoding/json could decode a member with this
// key into a field of one of the names other than by an exact match: it
// matches keys case-insensitively, with Unicode folding (the Kelvin sign
// is a k), so a key that differs from every name only in case, or that
// is not ASCII, may still be one of them.
func MayName(key []byte, names ...string) bool {
	for _, c := range key {
		if c >= utf8.RuneSelf {
			return true
		}
	}
	for _, n := range names {
		if equalFoldASCII(key, n) {
			return true
		}
	}
	return false
}

func equalFoldASCII(a []byte, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// String reads the string at i when encoding/json would decode it to its
// bytes as they are: no escapes, no control characters, valid UTF-8 (it
// replaces invalid bytes). It returns the bytes between the quotes (not
// a copy) and the index after the closing quote.
func String(data []byte, i int) ([]byte, int, bool) {
	s, next, ok := rawString(data, i)
	if !ok || !utf8.Valid(s) {
		return nil, i, false
	}
	return s, next, true
}

// rawString is String without the UTF-8 check.
func rawString(data []byte, i int) ([]byte, int, bool) {
	if i >= len(data) || data[i] != '"' {
		return nil, i, false
	}
	for j := i + 1; j < len(data); j++ {
		if c := data[j]; stringStop[c] {
			if c != '"' {
				return nil, i, false
			}
			return data[i+1 : j], j + 1, true
		}
	}
	return nil, i, false
}

// Literal reads true, false or null at i: which one, and the index after
// it. ok is false for anything else.
func Literal(data []byte, i int) (lit byte, next int, ok bool) {
	for _, w := range [...]string{"true", "false", "null"} {
		if len(data)-i >= len(w) && string(data[i:i+len(w)]) == w {
			return w[0], i + len(w), true
		}
	}
	return 0, i, false
}

// Uint32s reads an array of token ids at i, appending them to dst[:0]:
// every element a plain decimal integer in 0..2^32-1 (no sign, fraction,
// exponent or leading zero), whitespace anywhere between. It returns the
// ids (never nil, [] included) and the index after the array.
func Uint32s(dst []uint32, data []byte, i int) ([]uint32, int, bool) {
	if i >= len(data) || data[i] != '[' {
		return nil, i, false
	}
	out := dst[:0]
	if out == nil {
		// A guess from the bytes left (an id and its comma take 2-11);
		// append grows it if the array is mostly one-digit ids.
		out = make([]uint32, 0, min((len(data)-i)/5+1, 1<<16))
	}
	i = SkipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return out, i + 1, true
	}
	for {
		// One pass a digit; the limit and leading-zero checks once a
		// number (10 digits cannot overflow a uint64).
		start := i
		var v uint64
		for i < len(data) {
			d := data[i] - '0'
			if d > 9 {
				break
			}
			v = v*10 + uint64(d)
			i++
		}
		if n := i - start; n == 0 || n > 10 || v > math.MaxUint32 || (n > 1 && data[start] == '0') {
			return nil, i, false
		}
		out = append(out, uint32(v))
		if i < len(data) && data[i] == ',' { // the common "1,2,3"
			if i++; i < len(data) && data[i]-'0' > 9 {
				i = SkipSpace(data, i)
			}
			continue
		}
		i = SkipSpace(data, i)
		if i >= len(data) {
			return nil, i, false
		}
		switch data[i] {
		case ',':
			i = SkipSpace(data, i+1)
		case ']':
			return out, i + 1, true
		default:
			return nil, i, false
		}
	}
}

// ValueEnd returns the index after the JSON value at i, having checked
// it as encoding/json's scanner does (RFC 8259: strings may hold any
// bytes but control characters, invalid UTF-8 included).
func ValueEnd(data []byte, i int) (int, bool) {
	return valueEnd(data, i, 0)
}

func valueEnd(data []byte, i, depth int) (int, bool) {
	if i >= len(data) {
		return i, false
	}
	switch c := data[i]; {
	case c == '"':
		return stringEnd(data, i)
	case c == '{':
		if depth >= maxDepth {
			return i, false
		}
		i = SkipSpace(data, i+1)
		if i < len(data) && data[i] == '}' {
			return i + 1, true
		}
		for {
			next, ok := stringEnd(data, i)
			if !ok {
				return i, false
			}
			i = SkipSpace(data, next)
			if i >= len(data) || data[i] != ':' {
				return i, false
			}
			if i, ok = valueEnd(data, SkipSpace(data, i+1), depth+1); !ok {
				return i, false
			}
			i = SkipSpace(data, i)
			if i >= len(data) {
				return i, false
			}
			switch data[i] {
			case ',':
				i = SkipSpace(data, i+1)
			case '}':
				return i + 1, true
			default:
				return i, false
			}
		}
	case c == '[':
		if depth >= maxDepth {
			return i, false
		}
		i = SkipSpace(data, i+1)
		if i < len(data) && data[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = valueEnd(data, i, depth+1); !ok {
				return i, false
			}
			i = SkipSpace(data, i)
			if i >= len(data) {
				return i, false
			}
			switch data[i] {
			case ',':
				i = SkipSpace(data, i+1)
			case ']':
				return i + 1, true
			default:
				return i, false
			}
		}
	case c == '-' || c-'0' <= 9:
		return numberEnd(data, i)
	default:
		_, next, ok := Literal(data, i)
		return next, ok
	}
}

// stringEnd returns the index after the string at i: escapes checked,
// control characters refused, other bytes taken as they are.
func stringEnd(data []byte, i int) (int, bool) {
	if i >= len(data) || data[i] != '"' {
		return i, false
	}
	for j := i + 1; j < len(data); j++ {
		c := data[j]
		if !stringStop[c] {
			continue
		}
		switch {
		case c == '"':
			return j + 1, true
		case c < 0x20:
			return j, false
		}
		// A backslash: one of the escapes.
		if j++; j >= len(data) {
			return j, false
		}
		switch data[j] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			if len(data)-j <= 4 {
				return j, false
			}
			for _, h := range data[j+1 : j+5] {
				if !isHex(h) {
					return j, false
				}
			}
			j += 4
		default:
			return j, false
		}
	}
	return len(data), false
}

func isHex(c byte) bool {
	return c-'0' <= 9 || (c|0x20)-'a' <= 5
}

// numberEnd returns the index after the number at i, in JSON's grammar:
// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func numberEnd(data []byte, i int) (int, bool) {
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && data[i]-'1' <= 8:
		i = digitsEnd(data, i+1)
	default:
		return i, false
	}
	if i < len(data) && data[i] == '.' {
		start := i + 1
		if i = digitsEnd(data, start); i == start {
			return i, false
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		start := i
		if i = digitsEnd(data, start); i == start {
			return i, false
		}
	}
	return i, true
}

func digitsEnd(data []byte, i int) int {
	for i < len(data) && data[i]-'0' <= 9 {
		i++
	}
	return i
}

// stringStop marks the bytes a string's scan stops at: its end, an
// escape, a control character.
var stringStop = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()
