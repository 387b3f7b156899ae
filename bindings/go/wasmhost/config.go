package wasmhost

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
)

// Config tunes how a module is loaded. The zero value is a good default.
type Config struct {
	// CacheDir keeps wazero's compiled machine code between processes, so
	// only the first start pays for compilation (about a second for a Go
	// module of a few MB). "" means os.UserCacheDir()/kvhash/wazero; if
	// there is no user cache directory, code is cached in memory only.
	CacheDir string
	// NoDiskCache keeps compiled code in memory only (read-only file
	// systems, or measuring a cold start).
	NoDiskCache bool
	// Instances caps how many module instances serve hashing calls at
	// once. 0 means min(GOMAXPROCS, 4). Instances are created only when
	// calls contend, so a single-goroutine user keeps one.
	Instances int
	// Stderr receives what the module writes to stderr (the Go runtime's
	// crash reports). nil discards it.
	Stderr io.Writer
	// MemoryLimit caps each instance's linear memory, in bytes (rounded
	// down to 64 KiB pages, at least 64 MiB); 0 means the wasm32 maximum,
	// 4 GiB. The module is told the limit and refuses requests that would
	// take its heap past 5/8 of it with ErrNoMemory, so an instance never
	// runs out of memory and traps.
	MemoryLimit uint64
}

// minMemoryLimit is the smallest limit the module accepts.
const minMemoryLimit = 64 << 20

// memoryLimit is the limit in bytes, in whole pages, or 0 for none.
func (c Config) memoryLimit() uint64 {
	if c.MemoryLimit == 0 || c.MemoryLimit >= 1<<32 {
		return 0
	}
	return max(c.MemoryLimit, minMemoryLimit) &^ (1<<16 - 1)
}

// defaultCacheDir is the per-user directory of compiled code.
func defaultCacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no user cache directory: %w", err)
	}
	return filepath.Join(base, "kvhash", "wazero"), nil
}

func (c Config) instances() int {
	if c.Instances > 0 {
		return c.Instances
	}
	// More instances than cores only adds memory: each call is CPU-bound.
	return min(runtime.GOMAXPROCS(0), 4)
}
