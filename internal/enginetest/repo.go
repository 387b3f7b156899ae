package enginetest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// RepoRoot is the directory holding go.mod, found by walking up from the
// test's working directory.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "no go.mod above the test's directory")
		dir = parent
	}
}

// VenvPython is the repository's venv interpreter (build/venv, made by
// `make venv`, with pyzmq, msgspec and Dynamo's wheel). The tests that
// need it fail, not skip, when it is missing: `make test` builds it first.
func VenvPython(t testing.TB) string {
	t.Helper()
	py := filepath.Join(RepoRoot(t), "build", "venv", "bin", "python")
	_, err := os.Stat(py)
	require.NoError(t, err, "the test needs the venv (pyzmq, msgspec, Dynamo's wheel): run `make venv` (looked for %s)", py)
	return py
}
