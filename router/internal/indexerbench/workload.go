// Package indexerbench feeds kvrouter and NVIDIA Dynamo's standalone
// indexer the same vLLM-format ZeroMQ KV event stream, side by side, and
// measures what each makes of it: blocks/s until the index holds
// everything, CPU per block, peak RSS, and the latency of Dynamo-API
// /query calls made while the stream comes in (make bench-indexer;
// docs/guides/indexer-benchmark.md).
package indexerbench

import (
	"fmt"
	"math/rand/v2"
)

// Spec shapes a generated stream.
type Spec struct {
	Engines      int
	StoredBlocks int // blocks stored in all, the sentinel aside
	BlockSize    int
	// Prompts are MinBlocks..MaxBlocks blocks long; SharedFrac of them
	// start with one of Prefixes system prefixes (PrefixMin..PrefixMax
	// blocks).
	MinBlocks, MaxBlocks int
	Prefixes             int
	PrefixMin, PrefixMax int
	SharedFrac           float64
	// RemovedFrac of the stored blocks are removed later, tails of
	// prompts' own blocks (never a system prefix's), RemoveLag prompts
	// after their store on the same engine.
	RemovedFrac float64
	RemoveLag   int
	// PromptsPerBatch is how many prompts' events one message carries
	// (one engine step).
	PromptsPerBatch int
	Seed            uint64
}

// DefaultSpec is the stream of issue 30: prompts of 32-512 blocks of 16
// tokens, 70 % sharing one of 64 system prefixes, 26 % of stored blocks
// removed later.
func DefaultSpec(engines, storedBlocks int) Spec {
	return Spec{
		Engines: engines, StoredBlocks: storedBlocks, BlockSize: 16,
		MinBlocks: 32, MaxBlocks: 512, Prefixes: 64, PrefixMin: 16, PrefixMax: 128, SharedFrac: 0.70,
		RemovedFrac: 0.26, RemoveLag: 8, PromptsPerBatch: 4, Seed: 1,
	}
}

func (s Spec) validate() error {
	switch {
	case s.Engines < 1:
		return fmt.Errorf("engines %d: want at least 1", s.Engines)
	case s.BlockSize < 1:
		return fmt.Errorf("block size %d: want at least 1", s.BlockSize)
	case s.MinBlocks < 2 || s.MaxBlocks < s.MinBlocks:
		return fmt.Errorf("prompt blocks %d..%d: want 2 <= min <= max", s.MinBlocks, s.MaxBlocks)
	case s.Prefixes < 1 || s.PrefixMin < 1 || s.PrefixMax < s.PrefixMin || s.PrefixMax+minOwnBlocks > s.MaxBlocks:
		return fmt.Errorf("prefixes %d of %d..%d blocks: want 1 <= min <= max <= the longest prompt - %d", s.Prefixes, s.PrefixMin, s.PrefixMax, minOwnBlocks)
	case s.SharedFrac < 0 || s.SharedFrac > 1 || s.RemovedFrac < 0 || s.RemovedFrac >= 1:
		return fmt.Errorf("fractions shared %v removed %v: want 0..1", s.SharedFrac, s.RemovedFrac)
	case s.PromptsPerBatch < 1 || s.RemoveLag < 0:
		return fmt.Errorf("prompts per batch %d, remove lag %d", s.PromptsPerBatch, s.RemoveLag)
	case s.StoredBlocks < s.MaxBlocks:
		return fmt.Errorf("stored blocks %d: want at least one longest prompt (%d)", s.StoredBlocks, s.MaxBlocks)
	}
	return nil
}

// Prompt is one request's prompt as an engine cached it: its system
// prefix (or none), then its own blocks, of which Kept are still held
// when the stream ends.
type Prompt struct {
	Engine    int
	Prefix    int // -1: none
	OwnFirst  uint64
	OwnBlocks int
	Kept      int
}

// Stream is a generated workload: what each engine publishes, and what
// an index that applied all of it must answer.
type Stream struct {
	Spec     Spec
	Prompts  []Prompt
	prefixes []blockRun // system prefixes' blocks
	// hasPrefix[engine][prefix]: the engine stored that prefix.
	hasPrefix [][]bool
	// Messages[engine]: the payloads in publishing order, the sentinel
	// last.
	Messages [][]Message
	Sentinel blockRun
	// Stored and Removed count block ids in BlockStored / BlockRemoved
	// events (the sentinel included in Stored).
	Stored, Removed int
	Bytes           int
}

// blockRun is consecutive block ids; block id b holds tokens
// b*BlockSize .. b*BlockSize+BlockSize-1 (every block's content unique).
type blockRun struct {
	first uint64
	n     int
}

// Message is one ZeroMQ message's payload (a msgpack EventBatch) and the
// blocks it stores.
type Message struct {
	Payload []byte
	Stored  int
}

// minOwnBlocks is the shortest own part of a prompt after its system
// prefix.
const minOwnBlocks = 16

// sentinelBlocks: every engine's last store, the same content on each;
// an index holding it on every engine has applied everything before it.
const sentinelBlocks = 4

// Generate builds the stream for spec, deterministic in spec.Seed.
func Generate(spec Spec) (*Stream, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(spec.Seed, 0x1dec5))
	st := &Stream{Spec: spec, hasPrefix: make([][]bool, spec.Engines)}
	var next uint64 = 1 // the next block id (token 0 is left unused)
	for range spec.Prefixes {
		n := spec.PrefixMin + rng.IntN(spec.PrefixMax-spec.PrefixMin+1)
		st.prefixes = append(st.prefixes, blockRun{next, n})
		next += uint64(n)
	}
	for e := range st.hasPrefix {
		st.hasPrefix[e] = make([]bool, spec.Prefixes)
	}
	// Prompts, each to an engine drawn at random, until the stored
	// blocks reach the target.
	var planned []storePlan
	stored := 0
	for stored < spec.StoredBlocks {
		p := Prompt{Engine: rng.IntN(spec.Engines), Prefix: -1}
		total := spec.MinBlocks + rng.IntN(spec.MaxBlocks-spec.MinBlocks+1)
		var sp storePlan
		if rng.Float64() < spec.SharedFrac {
			p.Prefix = rng.IntN(spec.Prefixes)
			pre := st.prefixes[p.Prefix]
			// A prompt's own part is never shorter than minOwnBlocks.
			p.OwnBlocks = max(total-pre.n, minOwnBlocks)
			if !st.hasPrefix[p.Engine][p.Prefix] {
				st.hasPrefix[p.Engine][p.Prefix] = true
				sp.withPrefix = true
				stored += pre.n
			}
		} else {
			p.OwnBlocks = total
		}
		p.OwnFirst = next
		next += uint64(p.OwnBlocks)
		p.Kept = p.OwnBlocks
		stored += p.OwnBlocks
		sp.prompt = len(st.Prompts)
		st.Prompts = append(st.Prompts, p)
		planned = append(planned, sp)
	}
	// Removals: tails of prompts' own blocks, drawn at random until the
	// removed fraction is reached.
	target := int(spec.RemovedFrac * float64(stored))
	removed := 0
	for _, i := range rng.Perm(len(st.Prompts)) {
		if removed >= target {
			break
		}
		p := &st.Prompts[i]
		n := min(1+rng.IntN(p.OwnBlocks), target-removed)
		p.Kept -= n
		removed += n
	}
	st.Sentinel = blockRun{next, sentinelBlocks}
	if err := st.encode(planned); err != nil {
		return nil, err
	}
	return st, nil
}

// storePlan is one prompt's store: whether it carries its system prefix
// (the first time its engine sees that prefix).
type storePlan struct {
	prompt     int
	withPrefix bool
}

// EngineHash is the engine's id of a block (vLLM's int form): a mix of the
// block id, so the same content has the same id on every engine (vLLM's
// sha256_cbor is deterministic across processes) and ids look random.
func EngineHash(block uint64) uint64 {
	z := block + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Tokens are the token ids of a prompt's blocks, prefix first.
func (st *Stream) Tokens(p Prompt) []uint32 {
	var out []uint32
	if p.Prefix >= 0 {
		out = st.appendTokens(out, st.prefixes[p.Prefix])
	}
	return st.appendTokens(out, blockRun{p.OwnFirst, p.OwnBlocks})
}

// SentinelTokens are the sentinel's token ids.
func (st *Stream) SentinelTokens() []uint32 { return st.appendTokens(nil, st.Sentinel) }

func (st *Stream) appendTokens(out []uint32, r blockRun) []uint32 {
	bs := uint64(st.Spec.BlockSize)
	for b := r.first; b < r.first+uint64(r.n); b++ {
		for t := b * bs; t < (b+1)*bs; t++ {
			out = append(out, uint32(t))
		}
	}
	return out
}

// Expected is what a /query for p's tokens must answer once the whole
// stream is applied: matched blocks per engine (engines with none left
// out). The prompt's engine holds its prefix and the kept head of its own
// blocks; every other engine that stored its prefix holds the prefix.
func (st *Stream) Expected(p Prompt) map[int]int {
	out := map[int]int{}
	pre := 0
	if p.Prefix >= 0 {
		pre = st.prefixes[p.Prefix].n
		for e := range st.Spec.Engines {
			if st.hasPrefix[e][p.Prefix] {
				out[e] = pre
			}
		}
	}
	if n := pre + p.Kept; n > 0 {
		out[p.Engine] = n
	}
	return out
}

// PromptBlocks is a prompt's length in blocks.
func (st *Stream) PromptBlocks(p Prompt) int {
	if p.Prefix >= 0 {
		return st.prefixes[p.Prefix].n + p.OwnBlocks
	}
	return p.OwnBlocks
}
