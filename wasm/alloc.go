package main

import (
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/kvhash/kvhash/internal/abi"
)

// maxLive bounds the bytes of all live allocations together. The module's
// Go heap lives in the same 4 GiB of linear memory and may need twice its
// live size while collecting; past that the Go runtime aborts, which the
// host would see as a trap. Refusing earlier turns it into kvhash_alloc's 0.
const maxLive = 1 << 30

// allocation is one live kvhash_alloc buffer.
type allocation struct {
	base uint32 // its offset in linear memory
	mem  []byte // its bytes (len = the size asked for)
	keep any    // the Go object that owns them, referenced so GC keeps it
}

// allocTable is the set of live allocations, sorted by base. Go's garbage
// collector does not move objects, so a referenced buffer stays at base
// until kvhash_free drops it from the table. A module instance is single
// threaded: no locking.
type allocTable struct {
	live  []allocation
	bytes uint64 // sum of len(mem)
	// hit is the index of the allocation the last lookup found: hosts
	// usually pass every argument of a call inside one scratch buffer.
	hit int
}

// room checks, before allocating, that size more bytes stay within
// maxLive.
func (t *allocTable) room(size uint64) error {
	if t.bytes+size > maxLive {
		return fmt.Errorf("%w: allocating %d bytes would exceed the %d bytes all live allocations may hold (%d live): the request is too large for the module",
			abi.ErrNoMemory, size, maxLive, t.bytes)
	}
	return nil
}

// add records a new allocation. base must not be inside a live one.
func (t *allocTable) add(base uint32, mem []byte, keep any) error {
	if err := t.room(uint64(len(mem))); err != nil {
		return err
	}
	i, found := t.find(base)
	if found {
		return fmt.Errorf("%w: allocation at %#x overlaps a live allocation", abi.ErrInternal, base)
	}
	t.live = slices.Insert(t.live, i, allocation{base: base, mem: mem, keep: keep})
	t.bytes += uint64(len(mem))
	return nil
}

// remove drops the allocation that starts at base.
func (t *allocTable) remove(base uint32) error {
	i, found := t.find(base)
	if !found || t.live[i].base != base {
		return fmt.Errorf("%w: %#x is not the start of a live allocation", abi.ErrOutOfBounds, base)
	}
	t.bytes -= uint64(len(t.live[i].mem))
	t.live = slices.Delete(t.live, i, i+1)
	return nil
}

// find returns the index of the allocation that holds ptr (found), or the
// index where an allocation starting at ptr would be inserted.
func (t *allocTable) find(ptr uint32) (int, bool) {
	if t.hit < len(t.live) && t.live[t.hit].holds(ptr) {
		return t.hit, true
	}
	// The first allocation starting after ptr; the one before may hold it.
	i, _ := slices.BinarySearchFunc(t.live, ptr, func(a allocation, p uint32) int {
		if a.base <= p {
			return -1
		}
		return 1
	})
	if i > 0 && t.live[i-1].holds(ptr) {
		t.hit = i - 1
		return i - 1, true
	}
	return i, false
}

// holds reports whether ptr lies inside a (a zero-size allocation holds
// its base, so that it can be freed).
func (a *allocation) holds(ptr uint32) bool {
	return ptr >= a.base && uint64(ptr) < uint64(a.base)+uint64(max(len(a.mem), 1))
}

// slice returns the n bytes at ptr, which must lie inside one live
// allocation. n == 0 is an empty input whatever ptr is; ptr 0 (NULL) with
// n > 0 is an invalid argument, as in the C API.
func (t *allocTable) slice(a *abi.Args, ptr uint32, n uint64, name string) []byte {
	if n == 0 {
		return nil
	}
	if ptr == 0 {
		a.Fail(abi.NullInput(name, n))
		return nil
	}
	i, found := t.find(ptr)
	if !found {
		a.Fail(fmt.Errorf("%w: %s at %#x is not inside a live allocation", abi.ErrOutOfBounds, name, ptr))
		return nil
	}
	al := t.live[i]
	off := uint64(ptr - al.base)
	if n > uint64(len(al.mem))-off {
		a.Fail(fmt.Errorf("%w: %s: %d bytes at %#x run past the end of its allocation (%d bytes at %#x)",
			abi.ErrOutOfBounds, name, n, ptr, len(al.mem), al.base))
		return nil
	}
	return al.mem[off : off+n : off+n]
}

// view returns the n elements of type T at ptr.
func view[T any](t *allocTable, a *abi.Args, ptr, n uint32, name string) []T {
	var zero T
	b := t.slice(a, ptr, uint64(n)*uint64(unsafe.Sizeof(zero)), name)
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

// str returns the n bytes at ptr as a string sharing the memory, for the
// call only.
func str(t *allocTable, a *abi.Args, ptr, n uint32, name string) string {
	b := t.slice(a, ptr, uint64(n), name)
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// out returns the single output value of type T at ptr (out_len,
// out_handle, ...): it must not be NULL.
func out[T any](t *allocTable, a *abi.Args, ptr uint32, name string) *T {
	if ptr == 0 {
		a.Fail(abi.NullOutput(name))
		return nil
	}
	if v := view[T](t, a, ptr, 1, name); v != nil {
		return &v[0]
	}
	return nil
}

// setLen writes a count to a u32 out_len; counts never reach 2^32 in a
// 4 GiB memory, the clamp only keeps a lie from wrapping.
func setLen(p *uint32, n int) {
	if p != nil {
		*p = uint32(min(uint64(n), math.MaxUint32))
	}
}

// mmLen is the length of the flat mm_hashes array, sum(mm_counts); a sum
// past 2^32 cannot lie in linear memory.
func mmLen(a *abi.Args, counts []uint32) uint32 {
	total := abi.MMHashCount(counts)
	if total > math.MaxUint32 {
		a.Fail(fmt.Errorf("%w: mm_counts add up to %d hashes, more than linear memory holds", abi.ErrOutOfBounds, total))
		return 0
	}
	return uint32(total)
}
