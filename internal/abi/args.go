package abi

import (
	"math"
	"unicode/utf8"
	"unsafe"
)

// maxViewBytes bounds the memory one argument may claim. No address space
// kvhash runs in is larger (x86-64 and arm64 user space are 47/48 bits,
// wasm32 is 32), so a longer length is a lie about the buffer; refusing it
// turns a would-be crash or a size_t -> int overflow into an error.
const maxViewBytes = min(1<<47, math.MaxInt)

// Args collects the first error met while an export converts its
// arguments, so that it converts them all and checks once.
type Args struct {
	Err error
}

// Fail records err unless an earlier argument already failed.
func (a *Args) Fail(err error) {
	if a.Err == nil {
		a.Err = err
	}
}

// View returns the n elements of type T at p as a slice over the caller's
// memory, valid for the call only. A length of 0 is an empty input whatever
// p is; NULL with a nonzero length, and lengths no buffer can have, fail.
func View[T any](a *Args, p *T, n uint64, name string) []T {
	if n == 0 {
		return nil
	}
	if p == nil {
		a.Fail(NullInput(name, n))
		return nil
	}
	if n > maxViewBytes/uint64(unsafe.Sizeof(*p)) {
		a.Fail(invalidf("%s length %d is larger than any buffer can be", name, n))
		return nil
	}
	return unsafe.Slice(p, int(n))
}

// String returns the n bytes at p as a string sharing the caller's memory,
// valid for the call only (core reads option strings and keeps nothing).
func String(a *Args, p *byte, n uint64, name string) string {
	b := View(a, p, n, name)
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// NullInput is the error of an input that is NULL with a nonzero length.
func NullInput(name string, n uint64) error {
	return invalidf("%s is NULL but its length is %d", name, n)
}

// NullOutput is the error of a required output pointer (out_len,
// out_handle, ...) that is NULL.
func NullOutput(name string) error {
	return invalidf("%s is NULL", name)
}

// Len converts a caller's count to int, failing when it does not fit.
func Len(a *Args, n uint64, name string) int {
	if n > math.MaxInt {
		a.Fail(invalidf("%s %d is too large (at most %d)", name, n, math.MaxInt))
		return 0
	}
	return int(n)
}

// CopyMessage copies msg into dst as a NUL-terminated C string, cut at a
// UTF-8 character boundary when dst is too small, and returns the full
// length of msg (the NUL not counted). With an empty dst nothing is
// written.
func CopyMessage(dst []byte, msg string) int {
	if len(dst) == 0 {
		return len(msg)
	}
	n := copy(dst[:len(dst)-1], TruncateUTF8(msg, len(dst)-1))
	dst[n] = 0
	return len(msg)
}

// TruncateUTF8 returns the longest prefix of s of at most max bytes that
// does not end inside a multi-byte UTF-8 character. Text that is not UTF-8
// is cut at max bytes.
func TruncateUTF8(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max
	for i := 0; i < utf8.UTFMax && n > 0 && !utf8.RuneStart(s[n]); i++ {
		n--
	}
	if !utf8.RuneStart(s[n]) {
		n = max
	}
	return s[:n]
}
