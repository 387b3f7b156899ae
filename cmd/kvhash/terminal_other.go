//go:build !linux

package main

import "os"

// isTerminal reports whether f is a character device: on these systems
// that stands for a terminal (it also matches /dev/null, which only costs
// a note on standard error).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
