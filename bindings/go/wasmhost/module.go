package wasmhost

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/kvhash/kvhash/core"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// Module is a loaded kvhash module: one compiled copy of the code and a
// pool of instances that run it. Safe for concurrent use.
type Module struct {
	runtime  wazero.Runtime
	cache    wazero.CompilationCache
	compiled wazero.CompiledModule
	config   wazero.ModuleConfig
	pool     pool
	closed   atomic.Bool

	closeOnce sync.Once
	closeErr  error
}

// memoryLimitEnv tells the module its memory limit (wasm/budget.go).
const memoryLimitEnv = "KVHASH_WASM_MEMORY_LIMIT"

// stabilityVars are the variables core.ModeFromEnvironment reads.
var stabilityVars = []string{core.EnvEnforce, core.EnvEnforceUpstream}

// LoadFile reads the module at path and loads it (see Load).
func LoadFile(ctx context.Context, path string, cfg Config) (*Module, error) {
	wasm, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("kvhash: read module: %w", err)
	}
	return Load(ctx, wasm, cfg)
}

// Load compiles the module (or takes its machine code from the cache),
// starts one instance and checks that it has every export the package
// calls, so a wrong or stale file fails here and not at the first call.
func Load(ctx context.Context, wasm []byte, cfg Config) (*Module, error) {
	cache, err := newCache(cfg)
	if err != nil {
		return nil, err
	}
	rtConfig := wazero.NewRuntimeConfigCompiler().WithCompilationCache(cache)
	if limit := cfg.memoryLimit(); limit > 0 {
		rtConfig = rtConfig.WithMemoryLimitPages(uint32(limit >> 16))
	}
	rt := wazero.NewRuntimeWithConfig(ctx, rtConfig)
	m := &Module{runtime: rt, cache: cache}
	fail := func(err error) (*Module, error) {
		_ = rt.Close(ctx)
		_ = cache.Close(ctx)
		return nil, err
	}
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	// A cold start is mostly compiling a few thousand functions: use every
	// core unless the caller chose a worker count.
	compileCtx := ctx
	if experimental.GetCompilationWorkers(ctx) == 1 {
		compileCtx = experimental.WithCompilationWorkers(ctx, runtime.GOMAXPROCS(0))
	}
	m.compiled, err = rt.CompileModule(compileCtx, wasm)
	if err != nil {
		return fail(fmt.Errorf("kvhash: compile module: %w", err))
	}
	if err := checkExports(m.compiled); err != nil {
		return fail(err)
	}
	stderr := cfg.Stderr
	if stderr == nil {
		stderr = io.Discard
	}
	// A Go wasip1 reactor: _initialize starts the Go runtime and must run
	// before any export. Real clocks and a real random source, because
	// the Go runtime seeds its map hashing from random_get.
	m.config = wazero.NewModuleConfig().
		WithName(""). // anonymous, so the pool can hold several instances
		WithStartFunctions("_initialize").
		WithSysWalltime().WithSysNanotime().WithSysNanosleep().
		WithRandSource(rand.Reader).
		WithStderr(stderr)
	// The index's "from environment" mode reads these inside the module,
	// which sees only the environment the host passes.
	for _, name := range stabilityVars {
		if v, ok := os.LookupEnv(name); ok {
			m.config = m.config.WithEnv(name, v)
		}
	}
	// The module sizes its memory budget by the limit it is told.
	if limit := cfg.memoryLimit(); limit > 0 {
		m.config = m.config.WithEnv(memoryLimitEnv, strconv.FormatUint(limit, 10))
	}
	m.pool.init(m, cfg.instances())
	in, err := m.pool.get(ctx)
	if err != nil {
		return fail(err)
	}
	m.pool.put(in, false)
	return m, nil
}

// newCache picks the compilation cache: the configured directory, else
// the user cache directory, else memory (when the user has no cache
// directory, a slower start beats no start).
func newCache(cfg Config) (wazero.CompilationCache, error) {
	if cfg.NoDiskCache {
		return wazero.NewCompilationCache(), nil
	}
	dir := cfg.CacheDir
	if dir == "" {
		d, err := defaultCacheDir()
		if err != nil {
			return wazero.NewCompilationCache(), nil
		}
		dir = d
	}
	c, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return nil, fmt.Errorf("kvhash: compilation cache %s: %w", dir, err)
	}
	return c, nil
}

// checkExports fails on a module that lacks an export this package calls.
func checkExports(c wazero.CompiledModule) error {
	have := c.ExportedFunctions()
	var missing []string
	for _, name := range append([]string{"_initialize"}, exportNames()...) {
		if _, ok := have[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("kvhash: module lacks exports %v (is it build/kvhash.wasm of this version?)", missing)
	}
	if _, ok := c.ExportedMemories()["memory"]; !ok {
		return errors.New("kvhash: module exports no memory")
	}
	return nil
}

// Close releases every instance (and every Index) of the module.
func (m *Module) Close(ctx context.Context) error {
	m.closeOnce.Do(func() {
		m.closed.Store(true)
		m.closeErr = errors.Join(m.runtime.Close(ctx), m.cache.Close(ctx))
	})
	return m.closeErr
}

// newInstance starts one more instance of the compiled code.
func (m *Module) newInstance(ctx context.Context) (*instance, error) {
	if m.closed.Load() {
		return nil, ErrClosed
	}
	mod, err := m.runtime.InstantiateModule(ctx, m.compiled, m.config)
	if err != nil {
		return nil, fmt.Errorf("kvhash: start module instance: %w", err)
	}
	return newInstance(mod)
}

// withInstance runs f on a pooled instance, holding its lock.
func (m *Module) withInstance(f func(in *instance) error) error {
	if m.closed.Load() {
		return ErrClosed
	}
	in, err := m.pool.get(context.Background())
	if err != nil {
		return err
	}
	in.mu.Lock()
	err = f(in)
	failed := in.failed != nil
	in.mu.Unlock()
	m.pool.put(in, failed)
	return err
}

// pool holds the instances that serve hashing calls. It grows only when
// every instance is busy, up to max, and drops instances that failed.
type pool struct {
	m    *Module
	mu   sync.Mutex
	cond sync.Cond
	idle []*instance
	live int
	max  int
}

func (p *pool) init(m *Module, max int) {
	p.m, p.max = m, max
	p.cond.L = &p.mu
}

func (p *pool) get(ctx context.Context) (*instance, error) {
	p.mu.Lock()
	for {
		if n := len(p.idle); n > 0 {
			in := p.idle[n-1]
			p.idle = p.idle[:n-1]
			p.mu.Unlock()
			return in, nil
		}
		if p.live < p.max {
			p.live++
			p.mu.Unlock()
			in, err := p.m.newInstance(ctx)
			if err != nil {
				p.mu.Lock()
				p.live--
				p.cond.Signal()
				p.mu.Unlock()
				return nil, err
			}
			return in, nil
		}
		p.cond.Wait()
	}
}

// put returns an instance. A failed one (it trapped or exited) is closed
// instead: its state is undefined, and its indexes already report the
// failure without calling it again.
func (p *pool) put(in *instance, failed bool) {
	if failed {
		_ = in.mod.Close(context.Background())
	}
	p.mu.Lock()
	if failed {
		p.live--
	} else {
		p.idle = append(p.idle, in)
	}
	p.cond.Signal()
	p.mu.Unlock()
}
