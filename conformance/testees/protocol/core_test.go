package protocol

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
)

func TestCoreMode(t *testing.T) {
	for _, tt := range []struct {
		mode string
		want core.Mode
	}{
		{ModeWarn, core.ModeWarn},
		{ModeEnforce, core.ModeEnforce},
	} {
		got, err := CoreMode(tt.mode)
		require.NoError(t, err, tt.mode)
		assert.Equal(t, tt.want, got, tt.mode)
	}
	// "environment" is core's name of ModeFromEnvironment, which a script
	// must not ask for: its answer would depend on the testee's environment.
	for _, mode := range []string{"", "environment", "Warn", "enforce "} {
		_, err := CoreMode(mode)
		assert.ErrorIs(t, err, core.ErrInvalidArgument, "%q", mode)
	}
}

func TestFromCoreMatches(t *testing.T) {
	got := FromCoreMatches([]core.Match{
		{Worker: core.Worker{ID: 1<<64 - 1, DPRank: 3}, Score: 2, TreeSize: 1<<63 + 5},
		{Worker: core.Worker{ID: 7}, Score: 1, TreeSize: 9},
	})
	assert.Equal(t, []Match{
		{WorkerID: 1<<64 - 1, DPRank: 3, Score: 2, TreeSize: 1<<63 + 5},
		{WorkerID: 7, Score: 1, TreeSize: 9},
	}, got)
	assert.Equal(t, []Match{}, FromCoreMatches(nil), "no matches is an empty answer, not null")
}
