package core

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The one-pass integer reader must give what strconv gives for every
// valid u64, leave everything else to the general path (which words the
// errors), and stop at the same byte either way.
func TestScannerUint64(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		err  string // substring; "" = valid
		rest string // what is left after the number
	}{
		{"0", 0, "", ""},
		{"7,", 7, "", ","},
		{" 42]", 42, "", "]"},
		{"18446744073709551615}", 18446744073709551615, "", "}"},
		{"18446744073709551614", 18446744073709551614, "", ""},
		{"9999999999999999999", 9999999999999999999, "", ""},
		{"10000000000000000000", 10000000000000000000, "", ""},
		{"18446744073709551616", 0, "exceeds 2^64-1", ""},
		{"18446744073709551620", 0, "exceeds 2^64-1", ""},
		{"28446744073709551615", 0, "exceeds 2^64-1", ""},
		{"184467440737095516150", 0, "exceeds 2^64-1", ""},
		{"01", 0, "leading zero", ""},
		{"00", 0, "leading zero", ""},
		{"-1", 0, "is negative", ""},
		{"-0", 0, "is negative", ""},
		{"1.0", 0, "is not an integer", ""},
		{"1e3", 0, "is not an integer", ""},
		{"1E3", 0, "is not an integer", ""},
		{"12.", 0, "no digits after", ""},
		{"x", 0, "unsigned integer", ""},
		{"", 0, "unsigned integer", ""},
	} {
		s := &scanner{data: []byte(tc.in)}
		v, err := s.uint64()
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, "input %q", tc.in)
			continue
		}
		require.NoError(t, err, "input %q", tc.in)
		assert.Equal(t, tc.want, v, "input %q", tc.in)
		assert.Equal(t, tc.rest, string(s.data[s.pos:]), "input %q", tc.in)
	}
}

// FuzzScannerUint64: for any input, a number read is one strconv reads
// the same from the same JSON number text, and an input strconv and JSON
// both accept as an unsigned integer is read.
func FuzzScannerUint64(f *testing.F) {
	for _, s := range []string{"0", "18446744073709551615", "18446744073709551616", "01", "1e5", "-3", "12,", "99999999999999999999"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s := &scanner{data: in}
		v, err := s.uint64()
		text := string(in[:s.pos])
		want, perr := strconv.ParseUint(string(trimSpace(in)), 10, 64)
		if err != nil {
			return
		}
		got, e := strconv.ParseUint(string(trimSpace([]byte(text))), 10, 64)
		require.NoError(t, e, "read %d from %q", v, in)
		require.Equal(t, got, v, "input %q", in)
		if perr == nil && json.Valid(in) {
			require.Equal(t, want, v, "input %q", in)
		}
	})
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// The eight-digit step against the plain loop, on every digit in every
// position and on words that are almost digits.
func TestEightDigits(t *testing.T) {
	for _, s := range []string{"00000000", "12345678", "99999999", "90000001", "10000000", "00000009"} {
		w := uint64(0)
		for i := 7; i >= 0; i-- {
			w = w<<8 | uint64(s[i])
		}
		require.True(t, eightDigits(w), s)
		want, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
		require.Equal(t, want, eightDigitsValue(w), s)
	}
	for _, s := range []string{"1234567:", "/1234567", "1234 567", "\xff2345678", "\xfa9999999", "123456\x0078"} {
		w := uint64(0)
		for i := 7; i >= 0; i-- {
			w = w<<8 | uint64(s[i])
		}
		require.False(t, eightDigits(w), "%q", s)
	}
}
