//go:build !linux

package core

// threadCPU has no per-thread clock to read here: it reports 0, and the
// benchmarks' CPU figures with it.
func threadCPU() int64 { return 0 }
