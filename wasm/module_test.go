package main

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/internal/abi"
	"github.com/kvhash/kvhash/internal/vectors"
)

// These tests run the built module (make build/kvhash.wasm; KVHASH_WASM
// overrides the path) in wazero, as a host would: they check its imports
// and exports against the documentation and the C header, every vector,
// and that bad pointers are errors, never traps.

// wasiImports is the module's whole import list, as docs/wasm/embedding.md
// documents it: what the Go runtime needs (kvhash itself does no I/O).
var wasiImports = []string{
	"args_get", "args_sizes_get", "clock_time_get", "environ_get", "environ_sizes_get",
	"fd_close", "fd_fdstat_get", "fd_fdstat_set_flags", "fd_prestat_dir_name", "fd_prestat_get",
	"fd_write", "poll_oneoff", "proc_exit", "random_get", "sched_yield",
}

var (
	compileOnce sync.Once
	runtime     wazero.Runtime
	compiled    wazero.CompiledModule
	compileErr  error
)

func wasmPath() string {
	if p := os.Getenv("KVHASH_WASM"); p != "" {
		return p
	}
	return filepath.Join("..", "build", "kvhash.wasm")
}

// compiledModule compiles the module once for the whole test binary.
func compiledModule(t *testing.T) wazero.CompiledModule {
	t.Helper()
	compileOnce.Do(func() {
		bin, err := os.ReadFile(wasmPath())
		if err != nil {
			compileErr = fmt.Errorf("%w (build it with `make build/kvhash.wasm`)", err)
			return
		}
		ctx := context.Background()
		// The interpreter: compiling 3 MB of Go-made WASM to machine code
		// costs more (much more under -race) than these tests run.
		runtime = wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
		wasi_snapshot_preview1.MustInstantiate(ctx, runtime)
		compiled, compileErr = runtime.CompileModule(ctx, bin)
	})
	require.NoError(t, compileErr)
	return compiled
}

// instance is one initialised module instance.
type instance struct {
	t   *testing.T
	ctx context.Context
	mod api.Module
}

func newInstance(t *testing.T) *instance {
	t.Helper()
	cm := compiledModule(t)
	ctx := context.Background()
	// A reactor: no _start; the host calls _initialize once, then exports.
	mod, err := runtime.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	require.NoError(t, err)
	t.Cleanup(func() { mod.Close(ctx) })
	in := &instance{t: t, ctx: ctx, mod: mod}
	in.call("_initialize")
	return in
}

// call calls an export; a trap fails the test.
func (in *instance) call(name string, args ...uint64) []uint64 {
	in.t.Helper()
	fn := in.mod.ExportedFunction(name)
	require.NotNil(in.t, fn, "export %s", name)
	res, err := fn.Call(in.ctx, args...)
	require.NoError(in.t, err, "%s trapped", name)
	return res
}

// status calls an export that returns an i32 status.
func (in *instance) status(name string, args ...uint64) abi.Status {
	in.t.Helper()
	return abi.Status(int32(uint32(in.call(name, args...)[0])))
}

func (in *instance) alloc(n int) uint64 {
	in.t.Helper()
	p := uint32(in.call("kvhash_alloc", uint64(n))[0])
	require.NotZero(in.t, p, "kvhash_alloc(%d)", n)
	return uint64(p)
}

func (in *instance) write(p uint64, b []byte) {
	in.t.Helper()
	require.True(in.t, in.mod.Memory().Write(uint32(p), b))
}

func (in *instance) read(p uint64, n int) []byte {
	in.t.Helper()
	b, ok := in.mod.Memory().Read(uint32(p), uint32(n))
	require.True(in.t, ok)
	return slices.Clone(b)
}

// put copies b into a new allocation.
func (in *instance) put(b []byte) uint64 {
	in.t.Helper()
	if len(b) == 0 {
		return 0
	}
	p := in.alloc(len(b))
	in.write(p, b)
	return p
}

func (in *instance) putU32s(v []uint32) uint64 { return in.put(u32Bytes(v)) }

func (in *instance) putU64s(v []uint64) uint64 { return in.put(u64Bytes(v)) }

// u32Bytes and u64Bytes are v in the module's (little-endian) layout.
func u32Bytes(v []uint32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, x)
	}
	return b
}

func u64Bytes(v []uint64) []byte {
	b := make([]byte, 0, 8*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, x)
	}
	return b
}

func (in *instance) u64s(p uint64, n int) []uint64 {
	b := in.read(p, 8*n)
	v := make([]uint64, n)
	for i := range v {
		v[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return v
}

func (in *instance) u32(p uint64) uint32 { return binary.LittleEndian.Uint32(in.read(p, 4)) }

func (in *instance) lastError() string {
	in.t.Helper()
	buf := in.alloc(1024)
	defer in.call("kvhash_free", buf)
	n := int32(uint32(in.call("kvhash_last_error", buf, 1024)[0]))
	require.GreaterOrEqual(in.t, n, int32(0))
	return string(in.read(buf, int(min(n, 1023))))
}

func TestModuleImports(t *testing.T) {
	var got []string
	for _, fn := range compiledModule(t).ImportedFunctions() {
		module, name, _ := fn.Import()
		assert.Equal(t, "wasi_snapshot_preview1", module, name)
		got = append(got, name)
	}
	sort.Strings(got)
	assert.Equal(t, wasiImports, slices.Compact(got))
	assert.Empty(t, compiledModule(t).ImportedMemories(), "the module has its own memory")
}

// cDecl matches a function declaration of kvhash.h.
var cDecl = regexp.MustCompile(`(?m)^((?:const )?[a-z_0-9]+ \*?)(kvhash_[a-z_0-9]+)\(([^)]*)\);`)

// wasmType is the WASM value type of a C type of the ABI: pointers and
// size_t are u32 offsets and lengths (i32), 64-bit integers are i64.
func wasmType(t *testing.T, c string) api.ValueType {
	c = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(c), "const "))
	switch {
	case strings.Contains(c, "*"), strings.HasPrefix(c, "size_t"), strings.HasPrefix(c, "int32_t"),
		strings.HasPrefix(c, "uint32_t"):
		return api.ValueTypeI32
	case strings.HasPrefix(c, "uint64_t"), strings.HasPrefix(c, "int64_t"):
		return api.ValueTypeI64
	}
	t.Fatalf("C type %q has no WASM mapping", c)
	return 0
}

// Every function of the C header is exported with the same name and the
// WASM form of its signature, plus the host's memory management.
func TestModuleExportsMatchHeader(t *testing.T) {
	header, err := os.ReadFile(filepath.Join("..", "capi", "include", "kvhash.h"))
	require.NoError(t, err)
	exports := compiledModule(t).ExportedFunctions()
	want := map[string]bool{"_initialize": true, "kvhash_alloc": true, "kvhash_free": true}
	decls := cDecl.FindAllStringSubmatch(string(header), -1)
	require.Len(t, decls, 24)
	for _, d := range decls {
		ret, name, params := d[1], d[2], d[3]
		want[name] = true
		fn, ok := exports[name]
		if !assert.True(t, ok, "%s is not exported", name) {
			continue
		}
		var wantParams []api.ValueType
		wantResult := []api.ValueType{wasmType(t, ret)}
		if strings.TrimSpace(ret) == "const char *" {
			// Static strings become copies into the caller's buffer.
			wantParams = []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}
			wantResult = []api.ValueType{api.ValueTypeI32}
		} else if strings.TrimSpace(params) != "void" {
			for _, p := range strings.Split(params, ",") {
				wantParams = append(wantParams, wasmType(t, p[:strings.LastIndexAny(p, " *")+1]))
			}
		}
		assert.Equal(t, wantParams, fn.ParamTypes(), "%s parameters", name)
		assert.Equal(t, wantResult, fn.ResultTypes(), "%s result", name)
	}
	var got []string
	for name := range exports {
		got = append(got, name)
		assert.True(t, want[name], "%s is exported but not in kvhash.h", name)
	}
	assert.Len(t, got, len(want))
	assert.Contains(t, compiledModule(t).ExportedMemories(), "memory")
}

func TestModuleVersions(t *testing.T) {
	in := newInstance(t)
	buf := in.alloc(16)
	n := in.status("kvhash_version", buf, 16)
	assert.Equal(t, abi.Version(), string(in.read(buf, int(n))))
	assert.Equal(t, byte(0), in.read(buf+uint64(n), 1)[0], "NUL-terminated")
	n = in.status("kvhash_spec_version", buf, 2)
	assert.Equal(t, abi.Status(2), n, "the full length")
	assert.Equal(t, []byte{'v', 0}, in.read(buf, 2), "cut and NUL-terminated")
	assert.Equal(t, abi.Status(2), in.status("kvhash_spec_version", 0, 0), "cap 0 only sizes")
	assert.Equal(t, abi.StatusOutOfBounds, in.status("kvhash_version", buf, 17))
}

func TestModulePublicVectorAndIndex(t *testing.T) {
	in := newInstance(t)
	tokens := in.putU32s([]uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	out, outLen := in.alloc(3*8), in.alloc(4)
	require.Equal(t, abi.StatusOK, in.status("kvhash_block_hashes", tokens, 12, 4, 0, 0, 0, 0, 0, 0, 0, 0, out, 3, outLen))
	local := []uint64{14643705804678351452, 16777012769546811212, 483935686894639516}
	assert.Equal(t, local, in.u64s(out, 3))
	seq := in.alloc(3 * 8)
	require.Equal(t, abi.StatusOK, in.status("kvhash_sequence_hashes", out, 3, seq, 3, outLen))
	assert.Equal(t, []uint64{14643705804678351452, 4945711292740353085, 12583592247330656132}, in.u64s(seq, 3))
	assert.Equal(t, uint64(4945711292740353085), in.call("kvhash_chain_step", local[0], local[1])[0])

	assert.Equal(t, abi.StatusBufferTooSmall, in.status("kvhash_block_hashes", tokens, 12, 4, 0, 0, 0, 0, 0, 0, 0, 0, out, 2, outLen))
	assert.Equal(t, uint32(3), in.u32(outLen))
	assert.Contains(t, in.lastError(), "3 needed")

	handle := in.alloc(8)
	require.Equal(t, abi.StatusOK, in.status("kvhash_index_new", 1, handle))
	h := in.u64s(handle, 1)[0]
	assert.NotZero(t, h)
	engine := in.putU64s([]uint64{100, 101, 102})
	require.Equal(t, abi.StatusOK, in.status("kvhash_index_apply_stored", h, 7, 0, 1, 0, 0, engine, out, 3))
	ev := `{"event_id":1,"data":{"stored":{"parent_hash":null,"blocks":[{"block_hash":5,"tokens_hash":14643705804678351452}]}},"dp_rank":2}`
	require.Equal(t, abi.StatusOK, in.status("kvhash_index_apply_json", h, 8, in.put([]byte(ev)), uint64(len(ev))))
	bad := in.put([]byte(`{"event_id":`))
	assert.Equal(t, abi.StatusDecode, in.status("kvhash_index_apply_json", h, 8, bad, 12))

	ids, ranks, scores, sizes := in.alloc(4*8), in.alloc(4*4), in.alloc(4*4), in.alloc(4*8)
	require.Equal(t, abi.StatusOK, in.status("kvhash_index_find_matches", h, out, 3, 0, ids, ranks, scores, sizes, 4, outLen))
	require.Equal(t, uint32(2), in.u32(outLen))
	assert.Equal(t, []uint64{7, 8}, in.u64s(ids, 2))
	assert.Equal(t, []byte{3, 0, 0, 0, 1, 0, 0, 0}, in.read(scores, 8))
	assert.Equal(t, []byte{0, 0, 0, 0, 2, 0, 0, 0}, in.read(ranks, 8))

	require.Equal(t, abi.StatusBufferTooSmall, in.status("kvhash_index_dump_jsonl", h, 0, 0, outLen))
	need := int(in.u32(outLen))
	dump := in.alloc(need)
	require.Equal(t, abi.StatusOK, in.status("kvhash_index_dump_jsonl", h, dump, uint64(need), outLen))
	assert.True(t, strings.HasSuffix(string(in.read(dump, need)), "\n"))

	stats := in.alloc(4096)
	require.Equal(t, abi.StatusOK, in.status("kvhash_index_stats_json", h, stats, 4096, outLen))
	assert.Contains(t, string(in.read(stats, int(in.u32(outLen)))), `"mode":"warn"`)

	require.Equal(t, abi.StatusOK, in.status("kvhash_index_workers", h, ids, ranks, 4, outLen))
	assert.Equal(t, uint32(2), in.u32(outLen))
	for _, call := range []struct {
		name string
		args []uint64
	}{
		{"kvhash_index_set_mode", []uint64{h, 2}},
		{"kvhash_index_apply_removed", []uint64{h, 7, 0, 2, engine + 16, 1}},
		{"kvhash_index_clear_worker", []uint64{h, 8, 2}},
		{"kvhash_index_clear_all_blocks", []uint64{h, 7}},
		{"kvhash_index_remove_worker", []uint64{h, 7}},
		{"kvhash_index_apply_router_event_json", []uint64{h, in.put([]byte(`{"worker_id":1,"event":{"event_id":1,"data":"cleared"}}`)), 55}},
		{"kvhash_index_free", []uint64{h}},
	} {
		assert.Equal(t, abi.StatusOK, in.status(call.name, call.args...), "%s: %s", call.name, in.lastError())
	}
	assert.Equal(t, abi.StatusUnknownHandle, in.status("kvhash_index_free", h))
}

func TestModuleMemoryRules(t *testing.T) {
	in := newInstance(t)
	tokens := in.putU32s([]uint32{1, 2, 3, 4})
	out, outLen := in.alloc(8), in.alloc(4)
	assert.Zero(t, tokens%8, "allocations are 8-byte aligned")
	hash := func(tok, n, o, cap, l uint64) abi.Status {
		return in.status("kvhash_block_hashes", tok, n, 4, 0, 0, 0, 0, 0, 0, 0, 0, o, cap, l)
	}
	assert.Equal(t, abi.StatusOK, hash(tokens, 4, out, 1, outLen))
	assert.Equal(t, abi.StatusOutOfBounds, hash(tokens, 5, out, 1, outLen), "tokens run past their allocation")
	assert.Equal(t, abi.StatusOutOfBounds, hash(tokens, 4, out, 2, outLen), "out runs past its allocation")
	assert.Equal(t, abi.StatusOutOfBounds, hash(tokens, 4, out, 1, outLen+1), "out_len straddles the end")
	assert.Equal(t, abi.StatusOutOfBounds, hash(tokens+4, 4, out, 1, outLen), "interior pointer, too long")
	assert.Equal(t, abi.StatusInvalidArgument, hash(0, 4, out, 1, outLen), "NULL tokens")
	assert.Equal(t, abi.StatusInvalidArgument, hash(tokens, 4, out, 1, 0), "NULL out_len")
	assert.Equal(t, abi.StatusOK, hash(0, 0, 0, 0, outLen), "NULL and empty")
	assert.Equal(t, uint32(0), in.u32(outLen))

	// Memory outside kvhash_alloc's buffers: the module's own data.
	assert.Equal(t, abi.StatusOutOfBounds, hash(1024, 4, out, 1, outLen))
	assert.Contains(t, in.lastError(), "not inside a live allocation")

	in.call("kvhash_free", tokens)
	assert.Equal(t, abi.StatusOutOfBounds, hash(tokens, 4, out, 1, outLen), "use after free")
	in.call("kvhash_free", tokens) // double free: ignored, reported
	assert.Contains(t, in.lastError(), "not the start of a live allocation")
	in.call("kvhash_free", 0)

	assert.Zero(t, in.call("kvhash_alloc", math.MaxUint32)[0], "more than the module will hold")
	assert.Contains(t, in.lastError(), "kvhash_alloc")
	assert.NotZero(t, in.call("kvhash_alloc", 0)[0], "a zero-size allocation is a valid pointer")
}

// Every export, called with pointers and lengths a careless or hostile
// host could pass, answers without trapping.
func TestModuleNeverTraps(t *testing.T) {
	in := newInstance(t)
	live := in.alloc(64)
	values := map[api.ValueType][]uint64{
		api.ValueTypeI32: {0, 1, 8, live, live + 60, 0x7FFFFFFF, 0xFFFFFFF8, math.MaxUint32},
		api.ValueTypeI64: {0, 1, math.MaxInt64, 1 << 63, math.MaxUint64},
	}
	for name, fn := range compiledModule(t).ExportedFunctions() {
		if name == "_initialize" || name == "kvhash_free" || name == "kvhash_alloc" {
			continue
		}
		params := fn.ParamTypes()
		for i := range 12 {
			args := make([]uint64, len(params))
			for j, p := range params {
				vs := values[p]
				args[j] = vs[(i*7+j*3+i*j)%len(vs)]
			}
			res := in.call(name, args...) // a trap fails here
			if len(fn.ResultTypes()) == 1 && fn.ResultTypes()[0] == api.ValueTypeI32 {
				st := int32(uint32(res[0]))
				assert.GreaterOrEqual(t, st, int32(abi.MinStatus), "%s%v", name, args)
				assert.NotEqual(t, int32(abi.StatusInternal), st, "%s%v: %s", name, args, in.lastError())
			}
		}
	}
}

// Every v1 vector through the module: the WASM binding's own check.
func TestModuleVectors(t *testing.T) {
	groups, err := vectors.Load(core.SpecVersion)
	require.NoError(t, err)
	in := newInstance(t)
	outLen := in.alloc(4)
	cases := 0
	for _, g := range groups {
		for _, c := range g.Cases {
			cases++
			checkVector(t, in, outLen, g.Name+"/"+c.Name, c)
		}
	}
	assert.Greater(t, cases, 300)
}

// checkVector runs one case through the exports of its kind; outLen is a
// 4-byte allocation the caller keeps for every case.
func checkVector(t *testing.T, in *instance, outLen uint64, id string, c vectors.Case) {
	t.Helper()
	// Each case allocates its buffers; free them all after.
	var allocs []uint64
	defer func() {
		for _, p := range allocs {
			in.call("kvhash_free", p)
		}
	}()
	put := func(b []byte) uint64 {
		p := in.put(b)
		if p != 0 {
			allocs = append(allocs, p)
		}
		return p
	}
	str := func(s string) (uint64, uint64) { return put([]byte(s)), uint64(len(s)) }
	opts := c.CoreOptions()
	// promptArgs are the arguments both hashing exports start with.
	promptArgs := func() []uint64 {
		lp, ll := str(opts.LoraName)
		np, nl := str(opts.CacheNamespace)
		var counts, flat []byte
		for _, e := range opts.MMHashes {
			counts = binary.LittleEndian.AppendUint32(counts, uint32(len(e)))
			flat = append(flat, u64Bytes(e)...)
		}
		eagle := uint64(0)
		if opts.Eagle {
			eagle = 1
		}
		return []uint64{put(u32Bytes(c.Tokens)), uint64(len(c.Tokens)), uint64(c.BlockSize), lp, ll, np, nl, eagle,
			put(flat), put(counts), uint64(len(opts.MMHashes))}
	}
	hashCall := func(cap int) (abi.Status, []uint64) {
		out := put(make([]byte, 8*cap))
		st := in.status("kvhash_block_hashes", append(promptArgs(), out, uint64(cap), outLen)...)
		if st != abi.StatusOK {
			return st, nil
		}
		return st, in.u64s(out, int(in.u32(outLen)))
	}
	fusedCall := func(cap int) (st abi.Status, local, seq []uint64) {
		lo, so := put(make([]byte, 8*cap)), put(make([]byte, 8*cap))
		st = in.status("kvhash_block_and_sequence_hashes", append(promptArgs(), lo, so, uint64(cap), outLen)...)
		if st != abi.StatusOK {
			return st, nil, nil
		}
		n := int(in.u32(outLen))
		return st, in.u64s(lo, n), in.u64s(so, n)
	}
	// sequenceCall runs kvhash_sequence_hashes over locals.
	sequenceCall := func(locals []uint64) []uint64 {
		seq := put(make([]byte, 8*len(locals)))
		require.Equal(t, abi.StatusOK, in.status("kvhash_sequence_hashes", put(u64Bytes(locals)), uint64(len(locals)), seq, uint64(len(locals)), outLen), id)
		return in.u64s(seq, len(locals))
	}
	switch c.Kind {
	case vectors.KindBlock:
		want := vectors.Uint64s(c.BlockHashes)
		st, got := hashCall(len(want))
		require.Equal(t, abi.StatusOK, st, "%s: %s", id, in.lastError())
		assert.Equal(t, want, got, id)
		lp, ll := str(opts.LoraName)
		np, nl := str(opts.CacheNamespace)
		assert.Equal(t, uint64(c.Seed), in.call("kvhash_seed", lp, ll, np, nl)[0], id)
		st, local, seq := fusedCall(len(want))
		require.Equal(t, abi.StatusOK, st, "%s: %s", id, in.lastError())
		assert.Equal(t, want, local, "%s: fused local hashes", id)
		assert.Equal(t, vectors.Uint64s(c.SequenceHashes), seq, "%s: fused sequence hashes", id)
		if len(want) > 0 {
			st, _, _ = fusedCall(len(want) - 1)
			assert.Equal(t, abi.StatusBufferTooSmall, st, id)
			assert.Equal(t, uint32(len(want)), in.u32(outLen), "%s: fused count needed", id)
			assert.Equal(t, vectors.Uint64s(c.SequenceHashes), sequenceCall(want), id)
		}
	case vectors.KindError:
		st, _ := hashCall(64)
		assert.Equal(t, abi.StatusInvalidArgument, st, id)
		st, _, _ = fusedCall(64)
		assert.Equal(t, abi.StatusInvalidArgument, st, id)
	case vectors.KindSeed:
		lp, ll := str(c.LoraName)
		np, nl := str(c.CacheNamespace)
		assert.Equal(t, uint64(c.Seed), in.call("kvhash_seed", lp, ll, np, nl)[0], id)
	case vectors.KindChain:
		locals := vectors.Uint64s(c.BlockHashes)
		seq := sequenceCall(locals)
		if len(locals) > 0 {
			assert.Equal(t, vectors.Uint64s(c.SequenceHashes), seq, id)
		}
	case vectors.KindRaw:
		b, err := hex.DecodeString(c.BytesHex)
		require.NoError(t, err)
		data := uint64(0) // a NULL pointer is fine with length 0
		if len(b) > 0 {
			data = put(b)
		}
		out := put(make([]byte, 8))
		require.Equal(t, abi.StatusOK, in.status("kvhash_raw_hash", data, uint64(len(b)), out), id)
		assert.Equal(t, []uint64{uint64(c.Hash)}, in.u64s(out, 1), id)
	default:
		t.Fatalf("%s: unknown case kind %q", id, c.Kind)
	}
}
