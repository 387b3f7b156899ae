// Package indexbench replays a Mooncake-format request trace against the
// core index: simulated workers with bounded LRU caches receive the
// requests a prefix-aware router sends them and report the blocks they
// store and evict, as KV events. It records that event stream once, then
// the benchmarks replay it against a fresh index and measure apply
// throughput, match latency and memory.
package indexbench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kvhash/kvhash/core"
)

// TraceBlockTokens is the number of prompt tokens one hash id of the
// trace stands for.
const TraceBlockTokens = 512

// Request is one line of a Mooncake trace.
type Request struct {
	Timestamp    int64    `json:"timestamp"`
	InputLength  int      `json:"input_length"`
	OutputLength int      `json:"output_length"`
	HashIDs      []uint64 `json:"hash_ids"`
}

// ReadTrace reads a Mooncake-format trace: one JSON object a line (blank
// lines skipped). Each request's input length must fit its hash ids: more
// than 512*(n-1) and at most 512*n tokens.
func ReadTrace(r io.Reader) ([]Request, error) {
	var out []Request
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		var req Request
		if err := json.Unmarshal(b, &req); err != nil {
			return nil, fmt.Errorf("trace line %d: %w", line, err)
		}
		n := len(req.HashIDs)
		if n == 0 || req.InputLength <= TraceBlockTokens*(n-1) || req.InputLength > TraceBlockTokens*n {
			return nil, fmt.Errorf("trace line %d: input_length %d does not fit %d hash ids of %d tokens",
				line, req.InputLength, n, TraceBlockTokens)
		}
		out = append(out, req)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("trace: no requests")
	}
	return out, nil
}

// ReadTraceFile reads the trace at path.
func ReadTraceFile(path string) ([]Request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	reqs, err := ReadTrace(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return reqs, nil
}

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
