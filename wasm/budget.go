package main

import (
	"fmt"
	goruntime "runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"

	"github.com/kvhash/kvhash/internal/abi"
)

// The module's memory budget. The Go heap lives in the module's linear
// memory, at most 4 GiB in wasm32 (less if the host caps it), and a Go
// runtime that cannot grow its heap aborts: the host would see a trap and
// lose the instance with every index in it. So the exports that grow the
// heap by more than a few bytes (kvhash_alloc, kvhash_index_new, the
// apply and dump calls) first ask the budget, which refuses a request
// that would take the heap's objects past admitFraction of the memory
// limit with KVHASH_ERR_NO_MEMORY; the instance stays usable, and freeing
// indexes or buffers makes room again. The rest of the limit is headroom:
// for the garbage collector, which the runtime's soft memory limit (set to
// runtimeFraction of it) makes collect before the heap reaches the end,
// and for the requests' own estimates, which are generous but estimates.
// Hashing and queries allocate (almost) nothing and are never refused, so
// a full instance still hashes.

const (
	// wasm32Memory is the most linear memory a wasm32 module can have.
	wasm32Memory = 1 << 32
	// minMemoryLimit is the smallest limit the module accepts: below it
	// the Go runtime's own needs leave no room for indexes.
	minMemoryLimit = 64 << 20
	// MemoryLimitEnv names the variable a host sets (in the module's WASI
	// environment) when it caps the module's memory below 4 GiB: the
	// limit in bytes, a plain decimal integer.
	MemoryLimitEnv = "KVHASH_WASM_MEMORY_LIMIT"

	admitEighths   = 5 // the heap's objects may take 5/8 of the limit
	runtimeEighths = 7 // the Go runtime's soft limit: 7/8 of it
)

// memoryBudget decides whether the heap can take a request. Reading the
// runtime's heap size costs more than a small request (tens of
// microseconds compiled), so the budget reads it only when the requests
// admitted since the last reading, added to that reading, could pass the
// admitted size: far from the limit almost no request reads it.
type memoryBudget struct {
	limit uint64 // the linear memory the module may use, in bytes
	// known is the heap at the last reading (valid if read), pending the
	// sum of the needs admitted since: an upper bound of the heap now,
	// as the estimates are.
	known, pending uint64
	read           bool
	// limitErr explains a bad MemoryLimitEnv value, reported with every
	// refusal (a reactor's initialisation has no way to report it).
	limitErr string
	heap     func() uint64 // bytes of heap objects, live or not yet swept
	collect  func()        // a full garbage collection
}

// parseMemoryLimit reads MemoryLimitEnv's value: "" is the wasm32 maximum;
// a bad value also gives the maximum, with a note saying why.
func parseMemoryLimit(v string) (limit uint64, note string) {
	v = strings.TrimSpace(v)
	if v == "" {
		return wasm32Memory, ""
	}
	n, err := strconv.ParseUint(v, 10, 64)
	switch {
	case err != nil:
		return wasm32Memory, fmt.Sprintf("%s=%q is not a byte count, so the limit is 4 GiB", MemoryLimitEnv, v)
	case n < minMemoryLimit:
		return minMemoryLimit, fmt.Sprintf("%s=%d is below the %d bytes the module needs, so the limit is that", MemoryLimitEnv, n, uint64(minMemoryLimit))
	case n > wasm32Memory:
		return wasm32Memory, ""
	}
	return n, ""
}

// newMemoryBudget is the budget of this runtime's heap under limit.
func newMemoryBudget(limit uint64, note string) *memoryBudget {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	return &memoryBudget{
		limit:    limit,
		limitErr: note,
		heap: func() uint64 {
			metrics.Read(sample)
			return sample[0].Value.Uint64()
		},
		collect: goruntime.GC,
	}
}

// apply makes the Go runtime collect garbage before its memory reaches
// the end of the limit (at the cost of more frequent collections there).
func (b *memoryBudget) apply() {
	debug.SetMemoryLimit(int64(b.limit / 8 * runtimeEighths))
}

// admitted is the most heap the budget lets requests fill.
func (b *memoryBudget) admitted() uint64 { return b.limit / 8 * admitEighths }

// admit returns nil if the heap can take need more bytes for what (a
// name for the message), and an abi.ErrNoMemory error otherwise. A heap
// that looks too full is read again, then collected once before the
// request is refused, so garbage never causes a refusal (a refusal costs
// a collection).
func (b *memoryBudget) admit(need uint64, what string) error {
	room := b.admitted()
	if need > room {
		return b.refuse(need, what)
	}
	fits := func() bool { return b.known <= room-need && b.pending <= room-need-b.known }
	if b.read && fits() {
		b.pending += need
		return nil
	}
	for _, collect := range []bool{false, true} {
		if collect {
			b.collect()
		}
		b.known, b.pending, b.read = b.heap(), 0, true
		if fits() {
			b.pending = need
			return nil
		}
	}
	return b.refuse(need, what)
}

func (b *memoryBudget) refuse(need uint64, what string) error {
	err := fmt.Errorf("%w: %s needs about %d bytes, but the module's heap already holds %d of the %d bytes it may fill "+
		"(5/8 of its %d-byte memory limit): free indexes or buffers, or give the module more memory (%s)",
		abi.ErrNoMemory, what, need, b.heap(), b.admitted(), b.limit, MemoryLimitEnv)
	if b.limitErr != "" {
		err = fmt.Errorf("%w; %s", err, b.limitErr)
	}
	return err
}

// Estimates of what requests add to the heap, on the generous side: the
// headroom above the admitted fraction absorbs their error.
const (
	// newIndexBytes is an empty index with its handle (about 4 KB).
	newIndexBytes = 16 << 10
	// eventBytesPerJSONByte: a stored block takes at least 40 bytes of
	// JSON and about 150 bytes in the index (node, lookup entry, decoded
	// block), so 8 bytes a JSON byte covers it.
	eventBytesPerJSONByte = 8
	// storedBlockBytes is one block of kvhash_index_apply_stored.
	storedBlockBytes = 256
	// dumpBytesPerBlock is one held block's share of a dump: its JSON and
	// the events it is built from, with the buffer's doubling.
	dumpBytesPerBlock = 256
	requestOverhead   = 4 << 10
)

func eventJSONBytes(n uint32) uint64    { return uint64(n)*eventBytesPerJSONByte + requestOverhead }
func storedBlocksBytes(n uint32) uint64 { return uint64(n)*storedBlockBytes + requestOverhead }
func dumpBytes(blocks uint64) uint64    { return blocks*dumpBytesPerBlock + requestOverhead }
