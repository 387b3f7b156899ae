package demo_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/demo"
)

// An engine that exits before it is ready is an error, returned at once:
// the launcher does not wait on the exit it has already seen.
func TestProcLauncherEngineExitsBeforeReady(t *testing.T) {
	dir := t.TempDir()
	late := filepath.Join(dir, "exit-late.sh")
	require.NoError(t, os.WriteFile(late, []byte("#!/bin/sh\nsleep 0.2\nexit 3\n"), 0o755))
	tests := []struct {
		name, bin, msg string
	}{
		{"exits at once", "/bin/false", "exited before ready"},
		{"exits 0 at once", "/bin/true", "exited before ready"},
		{"exits after a while", late, "exit status 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := demo.ProcLauncher{Bin: tc.bin, LogDir: filepath.Join(dir, "logs")}
			errc := make(chan error, 1)
			go func() {
				_, err := l.Start(context.Background(), "engine-0", demo.EngineConfig{Model: "m", BlockSize: 16}, demo.Addrs{})
				errc <- err
			}()
			select {
			case err := <-errc:
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.msg)
			case <-time.After(10 * time.Second):
				t.Fatal("Start did not return after the engine exited")
			}
		})
	}
}
