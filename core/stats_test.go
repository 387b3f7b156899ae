package core

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStatsJSONRoundTrip(t *testing.T) {
	x := NewIndex(IndexOptions{Mode: ModeEnforce})
	parent := uint64(999)
	require.NoError(t, x.ApplyStored(Worker{ID: 1 << 63, DPRank: 2}, 1, nil, []StoredBlock{{BlockHash: 10, TokensHash: 1}}))
	require.Error(t, x.ApplyStored(Worker{ID: 7}, 2, &parent, []StoredBlock{{BlockHash: 11, TokensHash: 2}}))
	want := x.Stats()
	require.NotZero(t, want.Violations[ViolationParentNotFound])

	data, err := json.Marshal(want)
	require.NoError(t, err)
	var got Stats
	require.NoError(t, json.Unmarshal(data, &got))
	assert.Equal(t, want, got)
}

func TestStatsJSONRejects(t *testing.T) {
	for _, in := range []string{
		`{"mode":"sometimes","nodes":0,"violations":{},"workers":[]}`,
		`{"mode":"warn","nodes":0,"violations":{"teleported":1},"workers":[]}`,
		`{"mode":"warn","nodes":-1}`,
		`[]`,
	} {
		var s Stats
		assert.ErrorIs(t, json.Unmarshal([]byte(in), &s), ErrDecode, in)
	}
}
