package sim

import (
	"os"
	"testing"
	"time"

	"github.com/kvhash/kvhash/internal/mooncake"
	"github.com/kvhash/kvhash/router/engine"
)

// smallTrace is a quick generated trace of both families.
func smallTrace(seed uint64, n int) Trace {
	return Trace{Name: "small", Requests: mooncake.Generate(seed, mooncake.GenerateOptions{
		Requests: n, RatePerSec: 20, SystemBlocks: 2, Tenants: 8, TenantBlocks: 4, MaxOutput: 40,
	})}
}

// smallConfig is a small fleet that a test sweeps in well under a second.
func smallConfig(t Trace) Config {
	cfg := DefaultConfig()
	cfg.Trace = t
	cfg.Engines = 4
	cfg.Loads = []float64{0.8}
	cfg.Engine = engine.DefaultConfig()
	cfg.Engine.BlockSize = 16
	cfg.Engine.NumBlocks = 4096
	cfg.Engine.MaxNumBatchedTokens = 2048
	cfg.ScrapeInterval = 100 * time.Millisecond
	return cfg
}

// skipOrFail skips a test whose tool is missing, unless
// KVHASH_REQUIRE_VENV=1 makes the missing tool a failure.
func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("KVHASH_REQUIRE_VENV") == "1" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}
