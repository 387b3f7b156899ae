package eventplane

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFleetMessagesRoundTripAndRejectBadInput(t *testing.T) {
	for _, m := range []fleetMsg{
		{Op: fleetHoldings, Replica: "a", Workers: []uint64{1, 7}, Conns: []connState{{Worker: 7, Rank: 0, Up: true}}},
		{Op: fleetRebuild, Replica: "b", Workers: []uint64{3}},
	} {
		data, err := encodeFleet(&m)
		require.NoError(t, err)
		got, err := decodeFleet(data)
		require.NoError(t, err)
		assert.Equal(t, m, got)
	}
	for _, tc := range []struct {
		name string
		msg  fleetMsg
		data []byte
	}{
		{name: "empty", data: []byte{}},
		{name: "another version", data: []byte{WireVersion + 1, 0x90}},
		{name: "not MessagePack", data: []byte{WireVersion, 0xc1}},
		{name: "no replica", msg: fleetMsg{Op: fleetHoldings}},
		{name: "unknown op", msg: fleetMsg{Op: 9, Replica: "a"}},
	} {
		data := tc.data
		if data == nil {
			var err error
			data, err = encodeFleet(&tc.msg)
			require.NoError(t, err)
		}
		_, err := decodeFleet(data)
		assert.Error(t, err, tc.name)
	}
}

func FuzzDecodeFleet(f *testing.F) {
	for _, m := range []fleetMsg{
		{Op: fleetHoldings, Replica: "a", Workers: []uint64{1, 2}, Conns: []connState{{Worker: 1, Up: true}}},
		{Op: fleetRebuild, Replica: "b", Workers: []uint64{9}},
	} {
		data, err := encodeFleet(&m)
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add([]byte{WireVersion, 0x94})
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeFleet(data)
		if err == nil {
			require.NotEmpty(t, m.Replica)
			require.Contains(t, []fleetOp{fleetHoldings, fleetRebuild}, m.Op)
		}
	})
}
