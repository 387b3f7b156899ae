package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/internal/enginetest"
	"github.com/kvhash/kvhash/router/internal/logtest"
)

// A router restart is not a cold start: the snapshot brings the index
// back, and the subscription resumes after the saved seq, so the engine's
// replay fills what it published while the router was down.
func TestE2ESnapshotRestartResumesFromTheSavedSeq(t *testing.T) {
	eng := startEngines(t)
	port := enginetest.FreePorts(t, 2)
	cfg := testConfig()
	cfg.Snapshot.Path = filepath.Join(t.TempDir(), "kvrouter.snap")
	eng.open("e", enginetest.TCP(port), enginetest.TCP(port+1), nil)
	toks := tokens(10, 24)

	first := startRouter(t, cfg)
	first.must(201, "POST", "/v1/workers", obj{"worker_id": 1, "model": "m", "endpoint": enginetest.TCP(port), "replay_endpoint": enginetest.TCP(port + 1)}, nil)
	eng.waitSub("e")
	p1, p2 := int64(101), int64(103)
	eng.send("e", []obj{stored(hashes(100, 2), nil, toks[:8], nil)}, nil)
	eng.send("e", []obj{stored(hashes(102, 2), &p1, toks[8:16], nil)}, nil)
	first.waitRoute("m", toks, nil, "1", 4)
	require.NoError(t, first.srv.Shutdown(t.Context()))
	require.FileExists(t, cfg.Snapshot.Path)

	// Published while no router listens: only the replay buffer has it.
	eng.send("e", []obj{stored(hashes(104, 2), &p2, toks[16:], nil)}, nil)

	second := startRouter(t, cfg)
	second.waitRoute("m", toks, nil, "1", 6)
	rv := second.rank(1, 0)
	require.NotNil(t, rv.LastSeq)
	assert.Equal(t, 2, *rv.LastSeq)
	assert.Equal(t, "live", rv.State)
	assert.Equal(t, 6, rv.Blocks)
	assert.Contains(t, second.logs.String(), "snapshot loaded")
}

// The real binary: flags and a config file, an engine over ZeroMQ, a
// route, then SIGTERM: a clean exit that writes the snapshot.
func TestE2EBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "kvrouter")
	build := exec.Command("go", "build", "-o", bin, "./cmd/kvrouter")
	build.Dir = enginetest.RepoRoot(t)
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	printed, err := exec.Command(bin, "--block-size", "4", "--print-config").Output()
	require.NoError(t, err)
	assert.Contains(t, string(printed), "block_size: 4")
	bad := exec.Command(bin, "--block-size", "4", "--log-format", "xml")
	var stderr strings.Builder
	bad.Stderr = &stderr
	err = bad.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 2, exit.ExitCode())
	assert.Contains(t, stderr.String(), "log.format")

	eng := startEngines(t)
	ports := enginetest.FreePorts(t, 2)
	eng.open("e", enginetest.TCP(ports), "", nil)
	dir := t.TempDir()
	snap := filepath.Join(dir, "kvrouter.snap")
	cfgPath := filepath.Join(dir, "kvrouter.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(fmt.Sprintf(`
block_size: 16
log: {format: json, level: info}
snapshot: {path: %s, interval: 1h}
workers:
  - {worker_id: 5, model: m, endpoint: "%s"}
`, snap, enginetest.TCP(ports))), 0o600))
	listen := fmt.Sprintf("127.0.0.1:%d", ports+1)
	cmd := exec.Command(bin, "--config", cfgPath, "--listen", listen, "--block-size", "4")
	var logs logtest.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if t.Failed() {
			t.Logf("kvrouter's logs:\n%s", logs.String())
		}
	})
	url := "http://" + listen
	eventually(t, "the binary to be ready", func() bool {
		code, _ := getTextQuiet(url + "/readyz")
		return code == 200
	})
	eng.waitSub("e")
	eng.send("e", []obj{stored(hashes(100, 3), nil, tokens(1, 12), nil)}, nil)
	bin1 := &router{t: t, url: url}
	bin1.waitRoute("m", tokens(1, 16), nil, "5", 3)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-done:
		require.NoError(t, err, "a clean exit on SIGTERM")
	case <-time.After(20 * time.Second):
		t.Fatal("kvrouter did not stop on SIGTERM")
	}
	require.FileExists(t, snap)
	assert.Contains(t, logs.String(), `"msg":"kvrouter: stopped cleanly"`)
}
