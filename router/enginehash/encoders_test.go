package enginehash

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pickleValue pickles a test value tree through the pickler's own steps:
// int64, string, []byte, nil and []any (a tuple).
func pickleValue(p *pickler, buf []byte, v any) []byte {
	switch x := v.(type) {
	case int64:
		return p.int(buf, x)
	case string:
		return p.str(buf, x)
	case []byte:
		return p.bytes(buf, x)
	case nil:
		return p.none(buf)
	case []any:
		buf = p.tupleOpen(buf, len(x))
		for _, e := range x {
			buf = pickleValue(p, buf, e)
		}
		return p.tupleClose(buf, len(x))
	}
	panic(fmt.Sprintf("test value of type %T", v))
}

func pickled(v any) []byte {
	var p pickler
	return p.end(pickleValue(&p, p.begin(nil), v))
}

// Expected bytes from CPython 3.11's pickle.dumps(v, protocol=5) and
// cbor2.dumps(v, canonical=True): each int opcode and CBOR head width at
// its boundaries, and the small-frame rule (no FRAME under 4 bytes).
func TestIntEncodingsMatchCPython(t *testing.T) {
	for _, tc := range []struct {
		v      int64
		pickle string
		cbor   string
	}{
		{-9223372036854775808, "8005950b000000000000008a0800000000000000802e", "3b7fffffffffffffff"},
		{-2147483649, "80059508000000000000008a05ffffff7fff2e", "3a80000000"},
		{-2147483648, "80059506000000000000004a000000802e", "3a7fffffff"},
		{-1, "80059506000000000000004affffffff2e", "20"},
		{0, "80054b002e", "00"},
		{255, "80054bff2e", "18ff"},
		{256, "80059504000000000000004d00012e", "190100"},
		{65535, "80059504000000000000004dffff2e", "19ffff"},
		{65536, "80059506000000000000004a000001002e", "1a00010000"},
		{2147483647, "80059506000000000000004affffff7f2e", "1a7fffffff"},
		{2147483648, "80059508000000000000008a0500000080002e", "1a80000000"},
		{4294967295, "80059508000000000000008a05ffffffff002e", "1affffffff"},
		{4294967296, "80059508000000000000008a0500000000012e", "1b0000000100000000"},
		{9223372036854775807, "8005950b000000000000008a08ffffffffffffff7f2e", "1b7fffffffffffffff"},
	} {
		t.Run(fmt.Sprint(tc.v), func(t *testing.T) {
			assert.Equal(t, tc.pickle, hex.EncodeToString(pickled(tc.v)))
			assert.Equal(t, tc.cbor, hex.EncodeToString(appendCBORInt(nil, tc.v)))
		})
	}
}

func TestPickleStructuresMatchCPython(t *testing.T) {
	assert.Equal(t, "8005292e", hex.EncodeToString(pickled([]any{})), "() is EMPTY_TUPLE, not memoized")
	assert.Equal(t, "8005950e000000000000002843009468008c0094680174942e",
		hex.EncodeToString(pickled([]any{[]byte{}, []byte{}, "", ""})), "empty bytes and str are singletons")
	assert.Equal(t, "8005950701000000000000420001000001010101",
		hex.EncodeToString(pickled(repeatByte(1, 256)))[:40], "256 bytes need BINBYTES")
	// 300 memoized strings, then the singleton "a" twice: its memo index is
	// 300, so the repeat is a LONG_BINGET (CPython 3.11: 2014 bytes).
	var tuple []any
	for i := range 300 {
		tuple = append(tuple, fmt.Sprintf("s%d", i))
	}
	tuple = append(tuple, "a", "a")
	p := pickled(tuple)
	assert.Len(t, p, 2014)
	sum := sha256.Sum256(p)
	assert.Equal(t, "a297d8ee287f9abc206b10fa7b5dc57f4740f581ebc5ee9ab1e60e56464d7ac7", hex.EncodeToString(sum[:]))
}

func repeatByte(b byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}

func TestStrSingletonSlot(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int
	}{
		{"", 256}, {"a", 'a'}, {"\x00", 0}, {"é", 0xe9}, {"ÿ", 0xff}, {"\u0080", 0x80},
		{"Ā", -1}, {"ab", -1}, {"漢", -1},
	} {
		require.Equal(t, tc.want, strSingletonSlot(tc.s), "%q", tc.s)
	}
}
