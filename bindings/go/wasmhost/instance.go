package wasmhost

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"
	"unsafe"

	"github.com/tetratelabs/wazero/api"
)

// exports are the functions of one instance, looked up once.
type exports struct {
	alloc, free, lastError, version, specVersion api.Function
	seed, chainStep, blockCount                  api.Function
	blockHashes, sequenceHashes, rawHash         api.Function
	blockAndSequenceHashes                       api.Function
	indexNew, indexFree, indexSetMode            api.Function
	indexApplyJSON, indexApplyRouterEventJSON    api.Function
	indexApplyStored, indexApplyRemoved          api.Function
	indexClearWorker, indexClearAllBlocks        api.Function
	indexRemoveWorker, indexFindMatches          api.Function
	indexDumpJSONL, indexStatsJSON, indexWorkers api.Function
}

func (e *exports) table() map[string]*api.Function {
	return map[string]*api.Function{
		"kvhash_alloc":                         &e.alloc,
		"kvhash_free":                          &e.free,
		"kvhash_last_error":                    &e.lastError,
		"kvhash_version":                       &e.version,
		"kvhash_spec_version":                  &e.specVersion,
		"kvhash_seed":                          &e.seed,
		"kvhash_chain_step":                    &e.chainStep,
		"kvhash_raw_hash":                      &e.rawHash,
		"kvhash_block_count":                   &e.blockCount,
		"kvhash_block_hashes":                  &e.blockHashes,
		"kvhash_block_and_sequence_hashes":     &e.blockAndSequenceHashes,
		"kvhash_sequence_hashes":               &e.sequenceHashes,
		"kvhash_index_new":                     &e.indexNew,
		"kvhash_index_free":                    &e.indexFree,
		"kvhash_index_set_mode":                &e.indexSetMode,
		"kvhash_index_apply_json":              &e.indexApplyJSON,
		"kvhash_index_apply_router_event_json": &e.indexApplyRouterEventJSON,
		"kvhash_index_apply_stored":            &e.indexApplyStored,
		"kvhash_index_apply_removed":           &e.indexApplyRemoved,
		"kvhash_index_clear_worker":            &e.indexClearWorker,
		"kvhash_index_clear_all_blocks":        &e.indexClearAllBlocks,
		"kvhash_index_remove_worker":           &e.indexRemoveWorker,
		"kvhash_index_find_matches":            &e.indexFindMatches,
		"kvhash_index_dump_jsonl":              &e.indexDumpJSONL,
		"kvhash_index_stats_json":              &e.indexStatsJSON,
		"kvhash_index_workers":                 &e.indexWorkers,
	}
}

func exportNames() []string {
	var e exports
	names := make([]string, 0, 32)
	for name := range e.table() {
		names = append(names, name)
	}
	return names
}

// instance is one running copy of the module. The module is
// single-threaded, so mu serializes every call into it.
type instance struct {
	mu  sync.Mutex
	mod api.Module
	mem api.Memory
	fn  exports
	// stack is reused by every call so a call does not allocate.
	stack [16]uint64
	// scratch is one live kvhash_alloc allocation reused for every
	// call's inputs and outputs; it only grows. Reusing it saves two
	// module calls (alloc and free) per buffer per call.
	scratch, scratchCap uint32
	// errBuf receives kvhash_last_error messages (see lastErrorMessage).
	errBuf, errCap uint32
	// failed is set when a call trapped or the instance exited; no
	// further call is made into it.
	failed error
}

func newInstance(mod api.Module) (*instance, error) {
	in := &instance{mod: mod, mem: mod.Memory()}
	for name, f := range in.fn.table() {
		if *f = mod.ExportedFunction(name); *f == nil {
			_ = mod.Close(context.Background())
			return nil, fmt.Errorf("kvhash: module lacks export %s", name)
		}
	}
	return in, nil
}

// call runs an export and returns its first result.
func (in *instance) call(f api.Function, args ...uint64) (uint64, error) {
	if in.failed != nil {
		return 0, in.failed
	}
	stack := in.stack[:]
	copy(stack, args)
	if err := f.CallWithStack(context.Background(), stack); err != nil {
		in.failed = fmt.Errorf("%w: %s: %w", ErrInstanceFailed, f.Definition().Name(), err)
		return 0, in.failed
	}
	return stack[0], nil
}

// callStatus runs an export that returns a status and turns a negative
// status into an *Error carrying the module's message.
func (in *instance) callStatus(f api.Function, args ...uint64) (Status, error) {
	r, err := in.call(f, args...)
	if err != nil {
		return 0, err
	}
	st := Status(api.DecodeI32(r))
	if st < 0 {
		return st, &Error{Op: f.Definition().Name(), Status: st, Message: in.lastErrorMessage()}
	}
	return st, nil
}

// lastErrorMessage reads kvhash_last_error. It uses its own allocation,
// not the scratch one: a call that failed may have left outputs there
// (out_len of a too-small buffer) that the caller still reads. It is best
// effort: the status alone still makes a useful error.
func (in *instance) lastErrorMessage() string {
	size := max(uint64(in.errCap), 256)
	for range 2 {
		if uint64(in.errCap) < size {
			if in.errBuf != 0 {
				if _, err := in.call(in.fn.free, uint64(in.errBuf)); err != nil {
					return ""
				}
				in.errBuf, in.errCap = 0, 0
			}
			if size > math.MaxUint32 {
				return ""
			}
			r, err := in.call(in.fn.alloc, size)
			if err != nil || uint32(r) == 0 {
				return ""
			}
			in.errBuf, in.errCap = uint32(r), uint32(size)
		}
		r, err := in.call(in.fn.lastError, uint64(in.errBuf), size)
		n := int64(api.DecodeI32(r))
		if err != nil || n < 0 {
			return ""
		}
		// The copy is NUL-terminated: it is whole only if n < size.
		if uint64(n) < size {
			b, ok := in.mem.Read(in.errBuf, uint32(n))
			if !ok {
				return ""
			}
			return string(b)
		}
		size = uint64(n) + 1
	}
	return ""
}

// reserve makes the scratch allocation at least size bytes and returns
// its address. Memory views taken before it are stale afterwards: an
// allocation may grow linear memory.
func (in *instance) reserve(size uint64) (uint32, error) {
	if size <= uint64(in.scratchCap) {
		return in.scratch, nil
	}
	if size > math.MaxUint32-7 {
		return 0, fmt.Errorf("%w: the call needs %d bytes of arguments and results, more than a 32-bit module holds", ErrNoMemory, size)
	}
	// Doubling amortizes growth, but not past 1 GiB, all a module's
	// buffers may hold; and if the module refuses the doubled size, the
	// exact one may still fit.
	grown := max(size, 4096)
	if double := 2 * uint64(in.scratchCap); double > grown && double <= 1<<30 {
		grown = double
	}
	grown = (grown + 7) &^ 7
	if in.scratch != 0 {
		if _, err := in.call(in.fn.free, uint64(in.scratch)); err != nil {
			return 0, err
		}
		in.scratch, in.scratchCap = 0, 0
	}
	ptr, err := in.alloc(grown)
	if exact := (size + 7) &^ 7; err == nil && ptr == 0 && exact < grown {
		grown = exact
		ptr, err = in.alloc(exact)
	}
	if err != nil {
		return 0, err
	}
	if ptr == 0 {
		// kvhash_alloc fails only when the request does not fit the
		// module's memory (or on a bug, which its message says).
		return 0, &Error{Op: "kvhash_alloc", Status: StatusNoMemory,
			Message: fmt.Sprintf("the call needs %d bytes of arguments and results: %s", size, in.lastErrorMessage())}
	}
	in.scratch, in.scratchCap = ptr, uint32(grown)
	return ptr, nil
}

// alloc calls kvhash_alloc: 0 means the module refused.
func (in *instance) alloc(size uint64) (uint32, error) {
	r, err := in.call(in.fn.alloc, size)
	return uint32(r), err
}

// layout places buffers in the scratch allocation, each 8-byte aligned
// because the module reads u64 arrays in place.
type layout struct{ size uint64 }

func (l *layout) add(n uint64) uint64 {
	off := l.size
	l.size = (off + n + 7) &^ 7
	return off
}

// addr is the module address of a buffer at off, or 0 for an empty one
// (the ABI accepts a null pointer with length 0).
func addr(base uint32, off uint64, n int) uint64 {
	if n == 0 {
		return 0
	}
	return uint64(base) + off
}

// hostLittleEndian allows copying Go slices into wasm memory (always
// little-endian) without encoding them value by value.
var hostLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

func (in *instance) view(ptr uint64, n uint64) ([]byte, error) {
	if ptr > math.MaxUint32 || n > math.MaxUint32 {
		return nil, fmt.Errorf("kvhash: host buffer %d+%d outside module memory", ptr, n)
	}
	b, ok := in.mem.Read(uint32(ptr), uint32(n))
	if !ok {
		return nil, fmt.Errorf("kvhash: host buffer %d+%d outside module memory", ptr, n)
	}
	return b, nil
}

func (in *instance) writeBytes(ptr uint64, b []byte) error {
	return writeText(in, ptr, b)
}

// writeString is writeBytes without converting s to a []byte (a copy).
func (in *instance) writeString(ptr uint64, s string) error {
	return writeText(in, ptr, s)
}

func writeText[T string | []byte](in *instance, ptr uint64, b T) error {
	if len(b) == 0 {
		return nil
	}
	v, err := in.view(ptr, uint64(len(b)))
	if err != nil {
		return err
	}
	copy(v, b)
	return nil
}

func (in *instance) writeU32s(ptr uint64, s []uint32) error {
	if len(s) == 0 {
		return nil
	}
	v, err := in.view(ptr, 4*uint64(len(s)))
	if err != nil {
		return err
	}
	if hostLittleEndian {
		copy(v, unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 4*len(s)))
		return nil
	}
	for i, x := range s {
		binary.LittleEndian.PutUint32(v[4*i:], x)
	}
	return nil
}

func (in *instance) writeU64s(ptr uint64, s []uint64) error {
	if len(s) == 0 {
		return nil
	}
	v, err := in.view(ptr, 8*uint64(len(s)))
	if err != nil {
		return err
	}
	if hostLittleEndian {
		copy(v, unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 8*len(s)))
		return nil
	}
	for i, x := range s {
		binary.LittleEndian.PutUint64(v[8*i:], x)
	}
	return nil
}

func (in *instance) appendU64s(dst []uint64, ptr uint64, n uint64) ([]uint64, error) {
	v, err := in.view(ptr, 8*n)
	if err != nil || n == 0 {
		return dst, err
	}
	if hostLittleEndian {
		start := len(dst)
		dst = slices.Grow(dst, int(n))[:start+int(n)]
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&dst[start])), 8*n), v)
		return dst, nil
	}
	for i := range n {
		dst = append(dst, binary.LittleEndian.Uint64(v[8*i:]))
	}
	return dst, nil
}

func (in *instance) readU32(ptr uint64) (uint32, error) {
	v, ok := in.mem.ReadUint32Le(uint32(ptr))
	if !ok {
		return 0, fmt.Errorf("kvhash: host buffer %d outside module memory", ptr)
	}
	return v, nil
}

// readString copies n bytes of text out of module memory.
func (in *instance) readString(ptr uint64, n uint64) (string, error) {
	v, err := in.view(ptr, n)
	if err != nil {
		return "", err
	}
	return string(v), nil
}

// putBytes copies b into the scratch allocation and returns its address
// (0 for empty input, which the ABI accepts).
func (in *instance) putBytes(b []byte) (uint64, error) {
	base, err := in.reserve(uint64(len(b)))
	if err != nil {
		return 0, err
	}
	ptr := addr(base, 0, len(b))
	return ptr, in.writeBytes(ptr, b)
}

func putU64(b []byte, v uint64) { binary.LittleEndian.PutUint64(b, v) }
func getU64(b []byte) uint64    { return binary.LittleEndian.Uint64(b) }
func getU32(b []byte) uint32    { return binary.LittleEndian.Uint32(b) }
