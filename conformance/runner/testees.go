package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// testeeSpec says how to start one testee.
type testeeSpec struct {
	Name string
	Argv []string
	Env  []string // added to the runner's environment
	Dir  string   // working directory; "" = the runner's
	// Needs lists files that must exist before the testee can start, and
	// MakeHint the command that builds them, for the "missing" message.
	Needs    []string
	MakeHint string
}

// Reference testees: the oracle's hashing answers are the expected ones of
// the differential round; the Go core's index answers are the expected ones
// of the index round (the oracle has no index).
const (
	defaultReference      = "oracle"
	defaultIndexReference = "go"
)

// defaultTestees are the seven standard testees, paths relative to the
// repository root (the runner's working directory under make). Library and
// module paths are passed explicitly so that a stale installed copy can
// never answer for the freshly built one.
func defaultTestees(root string) []testeeSpec {
	abs := func(p string) string { return filepath.Join(root, p) }
	py := abs("build/venv/bin/python")
	lib := abs("build/libkvhash.so")
	wasm := abs("build/kvhash.wasm")
	speedups := abs("build/pyext/kvhash/_speedups.so")
	// The ctypes testee converts lists with the package's C extension, the
	// wasmtime one with its pure-Python fallback: both conversion paths
	// answer every case.
	pyEnv := func(backend, speedups string) []string {
		return []string{"KVHASH_BACKEND=" + backend, "KVHASH_LIBRARY=" + lib, "KVHASH_WASM=" + wasm,
			"KVHASH_SPEEDUPS=" + speedups, "PYTHONPATH=" + abs("python/src")}
	}
	return []testeeSpec{
		{Name: "oracle", Argv: []string{py, abs("conformance/testees/oracle.py")},
			Needs: []string{py}, MakeHint: "make venv"},
		{Name: "go", Argv: []string{abs("build/conformance/gocore-testee")},
			Needs: []string{abs("build/conformance/gocore-testee")}, MakeHint: "make build/conformance/gocore-testee"},
		{Name: "c", Argv: []string{abs("build/conformance/c-testee")},
			Needs:    []string{abs("build/conformance/c-testee"), lib},
			MakeHint: "make build/libkvhash.so build/conformance/c-testee"},
		{Name: "python-ctypes", Argv: []string{py, abs("conformance/testees/python_testee.py")}, Env: pyEnv("native", speedups),
			Needs:    []string{py, lib, speedups, abs("python/src/kvhash/__init__.py")},
			MakeHint: "make venv build/libkvhash.so build/pyext/kvhash/_speedups.so"},
		{Name: "python-wasmtime", Argv: []string{py, abs("conformance/testees/python_testee.py")}, Env: pyEnv("wasm", "0"),
			Needs:    []string{py, wasm, abs("python/src/kvhash/__init__.py")},
			MakeHint: "make venv build/kvhash.wasm"},
		{Name: "wazero", Argv: []string{abs("build/conformance/wazero-testee")}, Env: []string{"KVHASH_WASM=" + wasm},
			Needs:    []string{abs("build/conformance/wazero-testee"), wasm},
			MakeHint: "make build/kvhash.wasm build/conformance/wazero-testee"},
		{Name: "node", Argv: []string{"node", abs("conformance/testees/node_testee.mjs")}, Env: []string{"KVHASH_WASM=" + wasm},
			Needs:    []string{abs("bindings/js/index.js"), wasm},
			MakeHint: "make build/kvhash.wasm"},
	}
}

// parseTesteeFlag reads NAME=COMMAND. COMMAND is split on spaces; leading
// VAR=value words become environment variables (no shell is involved, so
// the runner can kill exactly the process it started).
func parseTesteeFlag(s string) (testeeSpec, error) {
	name, command, ok := strings.Cut(s, "=")
	if !ok || name == "" || strings.TrimSpace(command) == "" {
		return testeeSpec{}, fmt.Errorf("--testee %q: want NAME=COMMAND", s)
	}
	spec := testeeSpec{Name: name}
	for _, word := range strings.Fields(command) {
		if len(spec.Argv) == 0 && strings.Contains(word, "=") && !strings.HasPrefix(word, "=") {
			spec.Env = append(spec.Env, word)
			continue
		}
		spec.Argv = append(spec.Argv, word)
	}
	if len(spec.Argv) == 0 {
		return testeeSpec{}, fmt.Errorf("--testee %q: no command after the environment", s)
	}
	return spec, nil
}

// missing returns an error naming the first needed file that does not
// exist and the make target that builds it.
func (s testeeSpec) missing() error {
	for _, f := range s.Needs {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("testee %s is not built: %s is missing (build it with `%s`)", s.Name, f, s.MakeHint)
		}
	}
	return nil
}
