package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// program returns a minimal WASI command whose _start runs body (the
// code of a function with no locals, without its end): it imports
// proc_exit as function 0 and exports its memory, as Go's wasip1
// programs do.
func program(body ...byte) []byte {
	section := func(id byte, content ...byte) []byte {
		return append([]byte{id, byte(len(content))}, content...)
	}
	name := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	var imp []byte
	imp = append(imp, 1)
	imp = append(imp, name("wasi_snapshot_preview1")...)
	imp = append(imp, name("proc_exit")...)
	imp = append(imp, 0x00, 0) // a function of type 0
	var exp []byte
	exp = append(exp, 2)
	exp = append(exp, name("memory")...)
	exp = append(exp, 0x02, 0)
	exp = append(exp, name("_start")...)
	exp = append(exp, 0x00, 1)
	code := append([]byte{0}, body...) // no locals
	code = append(code, 0x0b)          // end

	m := []byte{0x00, 'a', 's', 'm', 1, 0, 0, 0}
	m = append(m, section(1, 2, 0x60, 1, 0x7f, 0, 0x60, 0, 0)...) // (i32)->(), ()->()
	m = append(m, section(2, imp...)...)
	m = append(m, section(3, 1, 1)...)    // _start has type 1
	m = append(m, section(5, 1, 0, 1)...) // one page of memory
	m = append(m, section(7, exp...)...)
	m = append(m, section(10, append([]byte{1, byte(len(code))}, code...)...)...)
	return m
}

func TestRunReturnsTheExitCode(t *testing.T) {
	for _, tc := range []struct {
		name string
		body []byte
		want uint32
	}{
		{"proc_exit(3)", []byte{0x41, 3, 0x10, 0}, 3},
		{"proc_exit(0)", []byte{0x41, 0, 0x10, 0}, 0},
		{"returns", nil, 0},
	} {
		path := filepath.Join(t.TempDir(), "p.wasm")
		require.NoError(t, os.WriteFile(path, program(tc.body...), 0o644))
		code, err := run(context.Background(), path, []string{"-x"})
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, code, tc.name)
	}
}

func TestRunReportsBadPrograms(t *testing.T) {
	dir := t.TempDir()
	_, err := run(context.Background(), filepath.Join(dir, "missing.wasm"), nil)
	require.Error(t, err)

	path := filepath.Join(dir, "bad.wasm")
	require.NoError(t, os.WriteFile(path, []byte("not wasm"), 0o644))
	_, err = run(context.Background(), path, nil)
	require.ErrorContains(t, err, "compiling")

	// unreachable: a trap is an error, not an exit code.
	path = filepath.Join(dir, "trap.wasm")
	require.NoError(t, os.WriteFile(path, program(0x00), 0o644))
	_, err = run(context.Background(), path, nil)
	require.ErrorContains(t, err, "running")
}
