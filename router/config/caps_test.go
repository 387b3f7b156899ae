package config

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The bounds of issue 24 item 4: their flags, keys, defaults and checks.
func TestCapSettings(t *testing.T) {
	cases := []struct {
		name    string
		file    string
		args    []string
		check   func(t *testing.T, c Config)
		wantErr string
	}{
		{"defaults", "", nil, func(t *testing.T, c Config) {
			assert.Zero(t, c.Index.MaxRankBlocks, "0: the indexer's default")
			assert.Equal(t, DefaultBindMaxWorkers, c.BindMaxWorkers)
			assert.Empty(t, c.BindTopics)
		}, ""},
		{"flags", "", []string{"--max-rank-blocks", "1000", "--bind-max-workers", "0", "--bind-topics", "kv@*, 7"}, func(t *testing.T, c Config) {
			assert.Equal(t, 1000, c.Index.MaxRankBlocks)
			assert.Zero(t, c.BindMaxWorkers)
			assert.Equal(t, []string{"kv@*", "7"}, c.BindTopics)
		}, ""},
		{"keys", "block_size: 16\nbind_max_workers: 3\nbind_topics: [a, b*]\nindex: {max_rank_blocks: 77}\n", nil, func(t *testing.T, c Config) {
			assert.Equal(t, 77, c.Index.MaxRankBlocks)
			assert.Equal(t, 3, c.BindMaxWorkers)
			assert.Equal(t, []string{"a", "b*"}, c.BindTopics)
		}, ""},
		{"negative block bound", "", []string{"--max-rank-blocks", "-1"}, nil, "index.max_rank_blocks"},
		{"negative worker bound", "", []string{"--bind-max-workers", "-2"}, nil, "bind_max_workers"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--block-size", "16"}, tc.args...)
			if tc.file != "" {
				args = append([]string{"--config", writeFile(t, tc.file)}, args...)
			}
			p, err := Parse("kvrouter", args, &bytes.Buffer{})
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			tc.check(t, p.Config)
		})
	}
}
