// Package indexbench replays a Mooncake-format request trace against the
// core index: simulated workers with bounded LRU caches receive the
// requests a prefix-aware router sends them and report the blocks they
// store and evict, as KV events. It records that event stream once, then
// the benchmarks replay it against a fresh index and measure apply
// throughput, match latency and memory.
package indexbench

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/internal/mooncake"
)

// TraceBlockTokens is the number of prompt tokens one hash id of the
// trace stands for.
const TraceBlockTokens = mooncake.BlockTokens

// Request is one line of a Mooncake trace; its timestamp is whole
// milliseconds.
type Request = mooncake.Request[int64]

// ReadTrace reads a Mooncake-format trace: one JSON object a line (blank
// lines skipped). Each request's input length must fit its hash ids: more
// than 512*(n-1) and at most 512*n tokens.
func ReadTrace(r io.Reader) ([]Request, error) { return mooncake.Read[int64](r) }

// ReadTraceFile reads the trace at path.
func ReadTraceFile(path string) ([]Request, error) { return mooncake.ReadFile[int64](path) }

// DefaultTracePath is the trace the benchmarks read unless told
// otherwise, relative to the repository root.
const DefaultTracePath = "../shared/data/mooncake-synthetic-trace.jsonl"

// ResolveTracePath returns path if set, else DefaultTracePath resolved
// against the repository root (the nearest directory above dir holding
// go.mod).
func ResolveTracePath(path, dir string) (string, error) {
	if path != "" {
		return path, nil
	}
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for ; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, DefaultTracePath), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s to resolve %s against", dir, DefaultTracePath)
		}
	}
}

// HashIDTokens returns the deterministic tokens a hash id stands for: the
// same id always gives the same 512 tokens, different ids differ.
func HashIDTokens(id uint64, dst []uint32) []uint32 {
	x := id*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	for range TraceBlockTokens {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		z ^= z >> 31
		dst = append(dst, uint32(z%151_936)) // a Qwen-sized vocabulary
	}
	return dst
}

// Prompt is a request as the router sees it: the canonical local hashes
// of its full blocks and their sequence hashes (which the simulated
// engines use as their own block names).
type Prompt struct {
	Local, Seq []uint64
}

// Expand turns requests into prompts at the given block size, which must
// divide 512. A hash id's blocks are hashed once and shared by every
// request that has it, as the tokens are.
func Expand(reqs []Request, blockSize int) ([]Prompt, error) {
	if blockSize <= 0 || TraceBlockTokens%blockSize != 0 {
		return nil, fmt.Errorf("block size %d does not divide %d", blockSize, TraceBlockTokens)
	}
	perID := TraceBlockTokens / blockSize
	cache := map[uint64][]uint64{}
	var tokens []uint32
	out := make([]Prompt, len(reqs))
	for i, r := range reqs {
		n := r.InputLength / blockSize
		local := make([]uint64, 0, n)
		for _, id := range r.HashIDs {
			h, ok := cache[id]
			if !ok {
				tokens = HashIDTokens(id, tokens[:0])
				var err error
				if h, err = core.BlockHashes(tokens, blockSize, core.Options{}); err != nil {
					return nil, err
				}
				cache[id] = h
			}
			local = append(local, h[:min(perID, n-len(local))]...)
		}
		out[i] = Prompt{Local: local, Seq: core.SequenceHashes(local)}
	}
	return out, nil
}
