// Package vectors reads the conformance vector files that the independent
// oracle writes (conformance/vectors/<spec>/*.json; schema in
// conformance/README.md) so that every Go test runs the same cases.
package vectors

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/kvhash/kvhash/core"
)

// Case kinds of the schema.
const (
	KindBlock = "block"
	KindError = "error"
	KindSeed  = "seed"
	KindChain = "chain"
	KindRaw   = "raw"
)

// Group is one vector file.
type Group struct {
	Spec        string `json:"spec"`
	Name        string `json:"group"`
	Description string `json:"description"`
	Cases       []Case `json:"cases"`
}

// Case is one vector. Which fields are set depends on Kind.
type Case struct {
	Kind      string   `json:"kind"`
	Name      string   `json:"name"`
	Tokens    []uint32 `json:"tokens"`
	BlockSize int      `json:"block_size"`
	Options   struct {
		LoraName       *string `json:"lora_name"`
		CacheNamespace *string `json:"cache_namespace"`
		Eagle          bool    `json:"eagle"`
		MMHashes       [][]U64 `json:"mm_hashes"`
	} `json:"options"`
	Seed           U64    `json:"seed"`
	BlockHashes    []U64  `json:"block_hashes"`
	SequenceHashes []U64  `json:"sequence_hashes"`
	Error          string `json:"error"`
	LoraName       string `json:"lora_name"`
	CacheNamespace string `json:"cache_namespace"`
	BytesHex       string `json:"bytes_hex"`
	Hash           U64    `json:"hash"`
}

// CoreOptions returns the case's options in core's form.
func (c Case) CoreOptions() core.Options {
	opts := core.Options{Eagle: c.Options.Eagle}
	if c.Options.LoraName != nil {
		opts.LoraName = *c.Options.LoraName
	}
	if c.Options.CacheNamespace != nil {
		opts.CacheNamespace = *c.Options.CacheNamespace
	}
	if c.Options.MMHashes != nil {
		opts.MMHashes = make([][]uint64, len(c.Options.MMHashes))
		for i, block := range c.Options.MMHashes {
			opts.MMHashes[i] = Uint64s(block)
		}
	}
	return opts
}

// U64 is a u64 written as a decimal string, as the schema requires.
type U64 uint64

// UnmarshalJSON accepts only a decimal string: a bare number would have
// passed through float64 in some readers and cannot be trusted.
func (u *U64) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("u64 must be a decimal string: %w", err)
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return err
	}
	*u = U64(v)
	return nil
}

// Uint64s converts a list of U64.
func Uint64s(in []U64) []uint64 {
	if in == nil {
		return nil
	}
	out := make([]uint64, len(in))
	for i, v := range in {
		out[i] = uint64(v)
	}
	return out
}

// Dir finds conformance/vectors/<spec> by walking up from the working
// directory to the module root, so tests of any package can use it.
func Dir(spec string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "conformance", "vectors", spec), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Load reads every group of a spec version, sorted by name. An empty
// directory is an error: a test that silently ran no vectors would pass.
func Load(spec string) ([]Group, error) {
	dir, err := Dir(spec)
	if err != nil {
		return nil, err
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no vector files in %s", dir)
	}
	slices.Sort(paths)
	groups := make([]Group, 0, len(paths))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var g Group
		if err := json.Unmarshal(data, &g); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if g.Spec != spec || len(g.Cases) == 0 {
			return nil, fmt.Errorf("%s: spec %q with %d cases, want spec %q with cases", p, g.Spec, len(g.Cases), spec)
		}
		groups = append(groups, g)
	}
	return groups, nil
}
