//go:build !amd64 || purego

package core

import "unsafe"

// prefetchSink keeps prefetch8's loads from being dropped.
var prefetchSink uintptr

// prefetch8 loads a word at each of the eight addresses: without a
// prefetch instruction, loads issued together still overlap their misses.
func prefetch8(p *[8]unsafe.Pointer) {
	var sum uintptr
	for _, a := range p {
		sum += *(*uintptr)(a)
	}
	prefetchSink += sum
}
