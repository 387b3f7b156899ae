package snapshot

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/indexer"
)

// FuzzDecode: any bytes give a state or an error, never a panic; a state
// re-encodes to the same bytes. The checksum is resealed on mutated
// inputs, so the fuzzer reaches the payload decoder, not only the check.
func FuzzDecode(f *testing.F) {
	good, err := Encode(fleet(f).Export())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good, false)
	f.Add(good[:len(good)/2], true)
	f.Add([]byte(Magic), false)
	overlong := append([]byte{}, good[:headerSize]...)
	overlong = append(overlong, 0x80, 0x00, 0, 0, 0)
	binary.LittleEndian.PutUint64(overlong[16:], 5)
	f.Add(append(overlong, make([]byte, sumSize)...), true)
	f.Fuzz(func(t *testing.T, data []byte, resealIt bool) {
		if resealIt && len(data) >= headerSize+sumSize && string(data[:len(Magic)]) == Magic {
			data = reseal(data)
		}
		s, err := Decode(data, bs)
		if err != nil {
			return
		}
		again, err := Encode(s)
		require.NoError(t, err)
		require.Equal(t, data, again)
		// A decodable state restores or is refused, without a panic.
		ix, err := indexer.New(indexer.Options{BlockSize: bs, Mode: core.ModeWarn})
		require.NoError(t, err)
		_ = ix.Restore(s)
	})
}
