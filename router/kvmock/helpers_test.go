package kvmock

import (
	"crypto/sha256"
	"encoding/binary"
	"os"
	"sync"
	"testing"

	"github.com/kvhash/kvhash/router/enginehash"
)

// testIDs is a stand-in block namer for tests of the cache and engine,
// which only need distinct, chained, deterministic ids (the real vLLM
// chain comes from router/enginehash and has its own tests).
type testIDs struct{ root Digest }

func (t testIDs) Root() Digest { return t.root }

func (t testIDs) Next(parent Digest, tokens []uint32, extra []enginehash.ExtraKey) (Digest, error) {
	h := sha256.New()
	h.Write(parent.Bytes())
	for _, k := range extra {
		h.Write([]byte(k.Text))
	}
	var b [4]byte
	for _, tok := range tokens {
		binary.LittleEndian.PutUint32(b[:], tok)
		h.Write(b[:])
	}
	return enginehash.DigestFromBytes(h.Sum(nil))
}

// mkDigest is a 32-byte digest: 0xD0, zeros, then last at byte 31, with
// byte 24 set to b24 (to give the wire id its top bit).
func mkDigest(last, b24 byte) Digest {
	var b [32]byte
	b[0], b[24], b[31] = 0xD0, b24, last
	d, err := enginehash.DigestFromBytes(b[:])
	if err != nil {
		panic(err)
	}
	return d
}

// newTestIDs is the test namer with a fixed root.
func newTestIDs() testIDs { return testIDs{root: mkDigest(0xAB, 0xAB)} }

// recordSink keeps every event it receives.
type recordSink struct {
	mu     sync.Mutex
	events []Event
}

func (r *recordSink) Emit(ev Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}

func (r *recordSink) take() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

// seqTokens is n consecutive token ids from start.
func seqTokens(start, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(start + i)
	}
	return out
}

// testConfig is a small, fast engine.
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.NumBlocks = 64
	cfg.BlockSize = 4
	cfg.VocabSize = 1000
	cfg.MaxModelLen = 256
	cfg.Speedup = 1000
	return cfg
}

// skipOrFail skips a test that needs the Python venv when it is missing,
// unless KVHASH_REQUIRE_VENV=1 (make test), where a missing venv fails.
func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("KVHASH_REQUIRE_VENV") == "1" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

func ptr[T any](v T) *T { return &v }

// digests are test digests named by their last byte.
func digests(names ...byte) []Digest {
	out := make([]Digest, len(names))
	for i, n := range names {
		out[i] = mkDigest(n, 0)
	}
	return out
}
