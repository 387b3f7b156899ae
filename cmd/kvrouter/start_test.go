package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What cannot be served exits 2 at start, before serving: a config's bad
// value, a snapshot path it cannot write, a snapshot it cannot read.
func TestStartFailuresExit2(t *testing.T) {
	dir := t.TempDir()
	foreign := filepath.Join(dir, "foreign.snap")
	require.NoError(t, os.WriteFile(foreign, []byte("not a snapshot"), 0o600))
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"unwritable snapshot", []string{"--snapshot", "/proc/kvrouter-none/x.snap"}, "cannot be written"},
		{"unreadable snapshot", []string{"--snapshot", foreign}, "snapshot-discard-unreadable"},
		{"huge block size", []string{"--block-size", "99999999999"}, "block_size"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			args := append([]string{"--listen", "127.0.0.1:0", "--block-size", "16"}, tc.args...)
			var out, errb bytes.Buffer
			code := run(ctx, args, &out, &errb)
			assert.Equal(t, 2, code, errb.String())
			assert.Contains(t, errb.String(), tc.msg)
			assert.NoError(t, ctx.Err(), "exited at start, not at the deadline")
		})
	}
	kept, err := os.ReadFile(foreign)
	require.NoError(t, err)
	assert.Equal(t, "not a snapshot", string(kept), "never overwritten")
}
