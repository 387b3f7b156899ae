package abi

import (
	"math"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestView(t *testing.T) {
	buf := []uint32{1, 2, 3}
	tests := []struct {
		name    string
		p       *uint32
		n       uint64
		wantLen int
		wantErr string
	}{
		{"empty with NULL", nil, 0, 0, ""},
		{"empty with pointer", &buf[0], 0, 0, ""},
		{"whole buffer", &buf[0], 3, 3, ""},
		{"NULL with length", nil, 2, 0, "tokens is NULL but its length is 2"},
		{"impossible length", &buf[0], 1 << 46, 0, "larger than any buffer"},
		{"size_t max", &buf[0], math.MaxUint64, 0, "larger than any buffer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a Args
			got := View(&a, tt.p, tt.n, "tokens")
			if tt.wantErr != "" {
				require.Error(t, a.Err)
				assert.Equal(t, StatusInvalidArgument, StatusOf(a.Err))
				assert.Contains(t, a.Err.Error(), tt.wantErr)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, a.Err)
			assert.Len(t, got, tt.wantLen)
		})
	}

	// A view is the caller's memory, not a copy.
	var a Args
	v := View(&a, &buf[1], 2, "tokens")
	v[0] = 20
	assert.Equal(t, uint32(20), buf[1])
}

func TestArgsKeepsFirstError(t *testing.T) {
	var a Args
	View[uint64](&a, nil, 1, "first")
	View[uint64](&a, nil, 1, "second")
	require.Error(t, a.Err)
	assert.Contains(t, a.Err.Error(), "first")
	assert.NotContains(t, a.Err.Error(), "second")
}

func TestString(t *testing.T) {
	b := []byte("my-lora")
	var a Args
	assert.Equal(t, "my-lora", String(&a, &b[0], uint64(len(b)), "lora"))
	assert.Equal(t, "", String(&a, nil, 0, "lora"))
	require.NoError(t, a.Err)
	assert.Equal(t, "", String(&a, nil, 1, "lora"))
	assert.Equal(t, StatusInvalidArgument, StatusOf(a.Err))
}

func TestLen(t *testing.T) {
	var a Args
	assert.Equal(t, 5, Len(&a, 5, "n"))
	require.NoError(t, a.Err)
	assert.Equal(t, 0, Len(&a, math.MaxUint64, "n"))
	assert.Equal(t, StatusInvalidArgument, StatusOf(a.Err))
	// Worded for the caller, not about Go's types (issue 10, item 13).
	assert.Equal(t, "invalid argument: n 18446744073709551615 is too large (at most 9223372036854775807)", Message(a.Err))
}

func TestNullOutput(t *testing.T) {
	err := NullOutput("out_len")
	assert.Equal(t, StatusInvalidArgument, StatusOf(err))
	assert.Contains(t, err.Error(), "out_len is NULL")
}

func TestCopyMessage(t *testing.T) {
	tests := []struct {
		name string
		msg  string
		cap  int
		want string // what the buffer holds before its NUL
	}{
		{"fits", "abc", 10, "abc"},
		{"exactly with NUL", "abc", 4, "abc"},
		{"cut", "abcdef", 4, "abc"},
		{"only the NUL", "abc", 1, ""},
		{"empty message", "", 4, ""},
		{"cut before a 2-byte char", "aé", 3, "a"},
		{"cut after a 2-byte char", "aéb", 4, "aé"},
		{"cut inside a 4-byte char", "a😀", 4, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := make([]byte, tt.cap)
			for i := range dst {
				dst[i] = 0xAA
			}
			n := CopyMessage(dst, tt.msg)
			assert.Equal(t, len(tt.msg), n)
			assert.Equal(t, tt.want, string(dst[:len(tt.want)]))
			assert.Equal(t, byte(0), dst[len(tt.want)])
			assert.True(t, utf8.Valid(dst[:len(tt.want)]))
		})
	}
	assert.Equal(t, 3, CopyMessage(nil, "abc"), "cap 0 only sizes")
}

func TestTruncateUTF8(t *testing.T) {
	assert.Equal(t, "héllo", TruncateUTF8("héllo", 10))
	assert.Equal(t, "h", TruncateUTF8("héllo", 2))
	assert.Equal(t, "hé", TruncateUTF8("héllo", 3))
	assert.Equal(t, "", TruncateUTF8("é", 1))
	// Not UTF-8: continuation bytes only, cut at the limit.
	assert.Equal(t, "\x80\x80\x80\x80\x80", TruncateUTF8("\x80\x80\x80\x80\x80\x80\x80", 5))
}
