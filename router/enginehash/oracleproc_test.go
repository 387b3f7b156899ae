package enginehash

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The Python oracle runs from the repository's venv (build/venv, made by
// `make venv`). Without it the oracle tests skip, unless
// KVHASH_REQUIRE_VENV=1 (make test sets it), where a missing venv fails.
func oraclePython(t testing.TB) string {
	t.Helper()
	py, err := filepath.Abs(filepath.Join("..", "..", "build", "venv", "bin", "python"))
	require.NoError(t, err)
	if _, err := os.Stat(py); err != nil {
		if os.Getenv("KVHASH_REQUIRE_VENV") == "1" {
			t.Fatalf("KVHASH_REQUIRE_VENV=1 but the venv's python is missing (%v): run `make venv`", err)
		}
		t.Skipf("no venv python at %s (make venv); oracle cross-check skipped", py)
	}
	return py
}

// runOracle runs testdata/oracle.py in mode with stdin and returns stdout.
func runOracle(t testing.TB, mode string, stdin []byte) []byte {
	t.Helper()
	cmd := exec.Command(oraclePython(t), filepath.Join("testdata", "oracle.py"), mode)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "oracle.py %s: %s", mode, stderr.String())
	return out
}

// oracleServer is one long-lived `oracle.py serve` per test process, for the
// fuzz target (a subprocess per input would be thousands of interpreters).
type oracleServer struct {
	mu  sync.Mutex
	in  io.WriteCloser
	out *bufio.Reader
	err error
}

var (
	serverOnce sync.Once
	server     oracleServer
)

func oracleServe(t testing.TB) *oracleServer {
	py := oraclePython(t)
	serverOnce.Do(func() {
		cmd := exec.Command(py, filepath.Join("testdata", "oracle.py"), "serve")
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			server.err = err
			return
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			server.err = err
			return
		}
		if err := cmd.Start(); err != nil {
			server.err = err
			return
		}
		// Ends with the test process: its stdin closes and the loop exits.
		server.in, server.out = in, bufio.NewReader(out)
	})
	require.NoError(t, server.err)
	return &server
}

func (s *oracleServer) run(c oracleCase) (oracleCase, error) {
	line, err := json.Marshal(c)
	if err != nil {
		return c, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.in.Write(append(line, '\n')); err != nil {
		return c, fmt.Errorf("oracle write: %w", err)
	}
	resp, err := s.out.ReadBytes('\n')
	if err != nil {
		return c, fmt.Errorf("oracle read: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(resp))
	dec.UseNumber()
	var r oracleCase
	if err := dec.Decode(&r); err != nil {
		return c, fmt.Errorf("oracle answer %q: %w", resp, err)
	}
	c.Root, c.Blocks = r.Root, r.Blocks
	return c, nil
}
