package protocol

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestU64RoundTrip(t *testing.T) {
	for _, v := range []uint64{0, 1, 1<<53 + 1, 1<<63 - 1, 1<<64 - 1} {
		data, err := json.Marshal(U64(v))
		require.NoError(t, err)
		assert.Equal(t, `"`+strconv.FormatUint(v, 10)+`"`, string(data))
		var back U64
		require.NoError(t, json.Unmarshal(data, &back))
		assert.Equal(t, U64(v), back)
	}
}

func TestU64Rejects(t *testing.T) {
	for _, in := range []string{
		`7`,                      // a bare number: a testee leaking doubles
		`"18446744073709551616"`, // 2^64
		`"-1"`, `"+1"`, `"01"`, `""`, `"1e3"`, `" 1"`, `null`,
	} {
		var v U64
		assert.Error(t, json.Unmarshal([]byte(in), &v), in)
	}
}

func FuzzParseU64(f *testing.F) {
	for _, s := range []string{"0", "18446744073709551615", "01", "-0", "", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseU64(s)
		if err != nil {
			return
		}
		// Whatever parses is the canonical text of its value.
		assert.Equal(t, s, strconv.FormatUint(n, 10))
	})
}
