//go:build !purego

package core

import "unsafe"

// prefetch8 asks the CPU to fetch the cache lines at the eight addresses
// (prefetch_amd64.s). Unlike a load, a prefetch does not wait for its
// line, so a walk can start the misses of its next lookups and go on.
//
//go:noescape
func prefetch8(p *[8]unsafe.Pointer)
