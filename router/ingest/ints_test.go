package ingest

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"
)

// TestFastTokensEveryForm: token ids in every form an encoder picks (and
// the wider forms some encoders use for small values), at every offset
// from the payload's end (the branch-free loop needs 5 bytes left), read
// back exactly; a value fastTokens does not take stops it there.
func TestFastTokensEveryForm(t *testing.T) {
	values := []uint32{0, 1, 127, 128, 255, 256, 65535, 65536, 1 << 24, math.MaxUint32}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name    string
		compact bool // false: msgpack's fixed wide forms
	}{{"compact", true}, {"wide", false}} {
		t.Run(tc.name, func(t *testing.T) {
			for n := range 24 {
				want := make([]uint32, n)
				for i := range want {
					want[i] = values[rng.IntN(len(values))]
				}
				var buf bytes.Buffer
				enc := msgpack.NewEncoder(&buf)
				enc.UseCompactInts(tc.compact)
				for _, v := range want {
					require.NoError(t, enc.EncodeUint(uint64(v)))
				}
				dec := NewDecoder()
				dec.payload = buf.Bytes()
				dec.r.Reset(dec.payload)
				got := make([]uint32, n)
				k := dec.fastTokens(got)
				if tc.compact {
					require.Equal(t, n, k)
					require.Equal(t, want, got)
					require.Zero(t, dec.r.Len(), "reader past every token")
				} else {
					// Wide forms: uint64 codes are left to the careful path.
					require.Equal(t, want[:k], got[:k])
				}
			}
		})
	}
	t.Run("stops at a string", func(t *testing.T) {
		var buf bytes.Buffer
		enc := msgpack.NewEncoder(&buf)
		for _, v := range []any{uint64(7), uint64(70000), "x", uint64(1), uint64(2), uint64(3)} {
			require.NoError(t, enc.Encode(v))
		}
		dec := NewDecoder()
		dec.payload = buf.Bytes()
		dec.r.Reset(dec.payload)
		got := make([]uint32, 6)
		require.Equal(t, 2, dec.fastTokens(got))
		require.Equal(t, []uint32{7, 70000}, got[:2])
		c, err := dec.r.ReadByte()
		require.NoError(t, err)
		require.Equal(t, byte(0xa1), c, "reader left at the string")
	})
}
