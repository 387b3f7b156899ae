package wasmhost

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// modulePath finds the module under test: $KVHASH_WASM, else the repo's
// build/kvhash.wasm (the repo root is the directory holding go.mod).
func modulePath(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv("KVHASH_WASM"); p != "" {
		return p
	}
	dir, err := os.Getwd()
	require.NoError(tb, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "build", "kvhash.wasm")
		}
		parent := filepath.Dir(dir)
		require.NotEqual(tb, dir, parent, "no go.mod above %s", dir)
		dir = parent
	}
}

// moduleBytes reads the module; a missing module fails the test (never a
// skip): the hosts are only tested if the module is built.
func moduleBytes(tb testing.TB) []byte {
	tb.Helper()
	path := modulePath(tb)
	wasm, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("kvhash WASM module not found at %s (%v): run `make build` (or `make build/kvhash.wasm`), or set KVHASH_WASM", path, err)
	}
	return wasm
}

var shared struct {
	once sync.Once
	mod  *Module
	err  error
}

// sharedModule is one module for the whole test binary: compiling it
// under the race detector is slow, and its instances are what the tests
// exercise anyway. It uses the default (user) compilation cache, the path
// real users take.
func sharedModule(tb testing.TB) *Module {
	tb.Helper()
	wasm := moduleBytes(tb)
	shared.once.Do(func() {
		shared.mod, shared.err = Load(context.Background(), wasm, Config{})
	})
	require.NoError(tb, shared.err)
	return shared.mod
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.mod != nil {
		_ = shared.mod.Close(context.Background())
	}
	os.Exit(code)
}
