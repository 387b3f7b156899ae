package msgpackcheck

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"
)

func TestLengthsAcceptsWhatTheEncoderWrites(t *testing.T) {
	for _, v := range []any{
		nil, true, false, 0, 127, -32, 128, -129, 1 << 40, uint64(1) << 63, 1.5, float32(2.5),
		"", "short", string(make([]byte, 40)), string(make([]byte, 300)), string(make([]byte, 70_000)),
		[]byte{}, []byte{1, 2, 3}, make([]byte, 300), make([]byte, 70_000),
		[]any{}, []any{1, "a", []any{2, map[string]any{"k": []byte{9}}}}, make([]uint64, 20), make([]uint32, 70_000),
		map[string]any{}, map[string]int{"a": 1, "b": 2}, map[int]any{1: nil, 2: []any{}},
		time.Unix(1, 2), // an extension
		struct {
			_msgpack struct{} `msgpack:",as_array"`
			A        string
			B        []uint64
		}{A: "x", B: []uint64{1, 2}},
	} {
		data, err := msgpack.Marshal(v)
		require.NoError(t, err)
		assert.NoError(t, Lengths(data), "%T %x", v, data[:min(len(data), 16)])
		assert.NoError(t, Lengths(append(data, 0xc1, 0xff)), "bytes after the value are not looked at")
	}
}

func TestLengthsRefusesWhatTheBytesCannotHold(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"array32 of a billion", []byte{0xdd, 0x3b, 0x9a, 0xca, 0x00, 1, 2, 3}},
		{"array16 one short", []byte{0xdc, 0x00, 0x03, 1, 2}},
		{"fixarray one short", []byte{0x93, 1, 2}},
		{"map32 of a billion", []byte{0xdf, 0x3b, 0x9a, 0xca, 0x00, 1, 2}},
		{"fixmap missing a value", []byte{0x81, 1}},
		{"str32 of 4 GB", []byte{0xdb, 0xf0, 0, 0, 0, 'a'}},
		{"fixstr cut short", []byte{0xa5, 'a', 'b'}},
		{"bin32 of 4 GB", []byte{0xc6, 0xf0, 0, 0, 0}},
		{"ext32 of 4 GB", []byte{0xc9, 0xf0, 0, 0, 0, 1}},
		{"fixext16 cut short", []byte{0xd8, 1, 2, 3}},
		{"uint64 cut short", []byte{0xcf, 0, 0, 0}},
		{"a header cut short", []byte{0xdd, 0x00}},
		{"nothing", nil},
		{"the never-used code", []byte{0xc1}},
		{"a lie inside a good array", []byte{0x92, 0x01, 0xdd, 0x4f, 0xff, 0xff, 0xff, 0x7f, 0, 0}},
		{"the fuzzer's load message", []byte("\x98\x01\xa1a\xa1i\xa2r1\xcf\x00\x00\x00\x00\x00\x00\x00\x01\xce\x00\x00\x00\x00\xcf\x00\x00\x00\x00\x005A\xd9\xddO\xff\xff\xff\x7f\x00\x00\x00\x00\x00\x00")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.ErrorIs(t, Lengths(tc.data), ErrLength)
		})
	}
}

// Whatever Lengths accepts, the library decodes without sizing anything
// beyond the input (a lie it let through would hang or exhaust the
// fuzzer), and Lengths never panics.
func FuzzLengths(f *testing.F) {
	for _, v := range []any{[]any{1, "a", map[string]any{"b": []byte{1}}}, time.Unix(5, 0), 1.5} {
		data, err := msgpack.Marshal(v)
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add([]byte{0xdd, 0x3b, 0x9a, 0xca, 0x00, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		if Lengths(data) == nil {
			var v any
			_ = msgpack.Unmarshal(data, &v)
		}
	})
}

// Whatever the encoder writes, Lengths accepts: values built from the
// fuzzer's bytes (nested arrays and maps of ints, strings and binaries of
// every size class), encoded by the library.
func FuzzLengthsOfEncoded(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 200, 100, 50})
	f.Fuzz(func(t *testing.T, ops []byte) {
		stack := [][]any{{}}
		for i, op := range ops {
			top := &stack[len(stack)-1]
			switch op % 8 {
			case 0:
				*top = append(*top, int64(op)<<(i%60))
			case 1:
				*top = append(*top, string(make([]byte, int(op)*int(op))))
			case 2:
				*top = append(*top, make([]byte, int(op)*300))
			case 3:
				if len(stack) < 32 {
					stack = append(stack, []any{})
				}
			case 4:
				if len(stack) > 1 {
					inner := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					stack[len(stack)-1] = append(stack[len(stack)-1], inner)
				}
			case 5:
				*top = append(*top, map[string]any{string(rune('a' + op%26)): *top})
			case 6:
				*top = append(*top, nil, true, 1.5)
			case 7:
				*top = append(*top, time.Unix(int64(op), int64(i)))
			}
		}
		for len(stack) > 1 {
			inner := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			stack[len(stack)-1] = append(stack[len(stack)-1], inner)
		}
		data, err := msgpack.Marshal(stack[0])
		require.NoError(t, err)
		require.NoError(t, Lengths(data))
	})
}
