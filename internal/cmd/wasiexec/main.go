// Command wasiexec runs a WASI (GOOS=wasip1) program in wazero, so that
// `go test -exec` can run a package's tests compiled to WebAssembly, the
// way build/kvhash.wasm runs, and so test the WebAssembly-only code
// (core/blocks64_wasm.s) where it runs:
//
//	GOOS=wasip1 GOARCH=wasm go test -exec "$PWD/build/bin/wasiexec" ./core
//
// The program gets its arguments, the environment (PWD set to the working
// directory, which Go's wasip1 port takes as its own), standard input and
// output, the host's clocks and randomness, and the host's file system
// mounted at /, so tests find testdata and the conformance vectors by
// their usual paths. wasiexec exits with the program's exit code.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: wasiexec PROGRAM.wasm [ARGS...]")
		os.Exit(2)
	}
	code, err := run(context.Background(), os.Args[1], os.Args[2:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "wasiexec:", err)
		os.Exit(1)
	}
	os.Exit(int(code))
}

// run runs the program to its end and returns its exit code.
func run(ctx context.Context, program string, args []string) (uint32, error) {
	wasm, err := os.ReadFile(program)
	if err != nil {
		return 0, err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return 0, err
	}
	// No compilation cache: compiling a test binary takes about two
	// seconds, and a cache would keep tens of megabytes for every binary
	// `go test` ever built.
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, r)

	config := wazero.NewModuleConfig().
		WithArgs(append([]string{program}, args...)...).
		WithStdin(os.Stdin).
		WithStdout(os.Stdout).
		WithStderr(os.Stderr).
		WithFSConfig(wazero.NewFSConfig().WithDirMount("/", "/")).
		WithSysWalltime().
		WithSysNanotime().
		WithSysNanosleep().
		WithRandSource(rand.Reader)
	for _, kv := range os.Environ() {
		if k, v, _ := strings.Cut(kv, "="); k != "PWD" {
			config = config.WithEnv(k, v)
		}
	}
	config = config.WithEnv("PWD", cwd)

	compiled, err := r.CompileModule(ctx, wasm)
	if err != nil {
		return 0, fmt.Errorf("compiling %s: %w", program, err)
	}
	mod, err := r.InstantiateModule(ctx, compiled, config)
	if exit := (*sys.ExitError)(nil); errors.As(err, &exit) {
		return exit.ExitCode(), nil
	}
	if err != nil {
		return 0, fmt.Errorf("running %s: %w", program, err)
	}
	// A program that returns from main without calling exit succeeded.
	return 0, mod.Close(ctx)
}
