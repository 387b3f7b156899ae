package kvmock

import (
	"crypto/sha256"
	"encoding/binary"
	"sync"
)

// testIDs is a stand-in block namer for tests of the cache and engine,
// which only need distinct, chained, deterministic ids (the real vLLM
// chain comes from router/enginehash and has its own tests).
type testIDs struct{ root Digest }

func (t testIDs) Root() Digest { return t.root }

func (t testIDs) Next(parent Digest, tokens []uint32) Digest {
	h := sha256.New()
	h.Write(parent[:])
	var b [4]byte
	for _, tok := range tokens {
		binary.LittleEndian.PutUint32(b[:], tok)
		h.Write(b[:])
	}
	var d Digest
	copy(d[:], h.Sum(nil))
	return d
}

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
