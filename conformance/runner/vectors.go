package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kvhash/kvhash/conformance/testees/protocol"
)

// group is one vector file: its cases as checks.
type group struct {
	Name   string
	Checks []check
}

type vectorFile struct {
	Spec  string            `json:"spec"`
	Group string            `json:"group"`
	Cases []json.RawMessage `json:"cases"`
}

type vectorCase struct {
	Kind           string           `json:"kind"`
	Name           string           `json:"name"`
	Tokens         []uint32         `json:"tokens"`
	BlockSize      *int64           `json:"block_size"`
	Options        protocol.Options `json:"options"`
	Seed           *protocol.U64    `json:"seed"`
	BlockHashes    []protocol.U64   `json:"block_hashes"`
	SequenceHashes []protocol.U64   `json:"sequence_hashes"`
	Error          string           `json:"error"`
	LoraName       *string          `json:"lora_name"`
	CacheNamespace *string          `json:"cache_namespace"`
	BytesHex       *string          `json:"bytes_hex"`
	Hash           *protocol.U64    `json:"hash"`
}

// loadGroups reads every *.json group of a spec-version directory, sorted
// by name. An unknown case kind is an error: a new kind must not pass
// unnoticed.
func loadGroups(dir string) ([]group, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("list vectors: %w", err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no vector files in %s", dir)
	}
	sort.Strings(files)
	spec := filepath.Base(dir)
	groups := make([]group, 0, len(files))
	for _, f := range files {
		g, err := loadGroup(f, spec)
		if err != nil {
			return nil, err
		}
		groups = append(groups, g)
	}
	return groups, nil
}

func loadGroup(path, spec string) (group, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return group{}, fmt.Errorf("read vectors: %w", err)
	}
	var vf vectorFile
	if err := json.Unmarshal(data, &vf); err != nil {
		return group{}, fmt.Errorf("%s: %w", path, err)
	}
	name := strings.TrimSuffix(filepath.Base(path), ".json")
	if vf.Group != name || vf.Spec != spec {
		return group{}, fmt.Errorf("%s: group %q spec %q, want group %q spec %q", path, vf.Group, vf.Spec, name, spec)
	}
	g := group{Name: name}
	for i, raw := range vf.Cases {
		var c vectorCase
		if err := json.Unmarshal(raw, &c); err != nil {
			return group{}, fmt.Errorf("%s: case %d: %w", path, i, err)
		}
		ch, err := caseCheck(c)
		if err != nil {
			return group{}, fmt.Errorf("%s: case %d (%s): %w", path, i, c.Name, err)
		}
		g.Checks = append(g.Checks, ch)
	}
	return g, nil
}

// caseCheck turns a vector case into requests and their expected answers.
func caseCheck(c vectorCase) (check, error) {
	ch := check{Name: c.Name}
	add := func(r protocol.Request, want answer) {
		ch.Reqs = append(ch.Reqs, r)
		ch.Want = append(ch.Want, want)
	}
	switch c.Kind {
	case "block", "error":
		if c.BlockSize == nil {
			return ch, fmt.Errorf("no block_size")
		}
		req := protocol.Request{Op: protocol.OpBlockHashes, Tokens: c.Tokens, BlockSize: *c.BlockSize, Options: c.Options}
		if c.Kind == "error" {
			add(req, errorAnswer(c.Error))
			return ch, nil
		}
		if c.BlockHashes == nil || c.SequenceHashes == nil || c.Seed == nil {
			return ch, fmt.Errorf("block case without block_hashes, sequence_hashes or seed")
		}
		add(req, resultAnswer(protocol.OpBlockHashes, c.BlockHashes))
		// The chain is checked over the expected locals, so a wrong local
		// hash is reported once, not again as a wrong chain.
		add(protocol.Request{Op: protocol.OpSequenceHashes, BlockHashes: c.BlockHashes},
			resultAnswer(protocol.OpSequenceHashes, c.SequenceHashes))
		add(protocol.Request{Op: protocol.OpSeed, LoraName: c.Options.LoraName, CacheNamespace: c.Options.CacheNamespace},
			resultAnswer(protocol.OpSeed, *c.Seed))
	case "seed":
		if c.Seed == nil {
			return ch, fmt.Errorf("seed case without seed")
		}
		add(protocol.Request{Op: protocol.OpSeed, LoraName: c.LoraName, CacheNamespace: c.CacheNamespace},
			resultAnswer(protocol.OpSeed, *c.Seed))
	case "chain":
		if c.BlockHashes == nil || len(c.SequenceHashes) != len(c.BlockHashes) {
			return ch, fmt.Errorf("chain case needs block_hashes and as many sequence_hashes")
		}
		add(protocol.Request{Op: protocol.OpSequenceHashes, BlockHashes: c.BlockHashes},
			resultAnswer(protocol.OpSequenceHashes, c.SequenceHashes))
		for i := 1; i < len(c.BlockHashes); i++ {
			add(protocol.Request{Op: protocol.OpChainStep, Parent: c.SequenceHashes[i-1], Local: c.BlockHashes[i]},
				resultAnswer(protocol.OpChainStep, c.SequenceHashes[i]))
		}
	case "raw":
		if c.BytesHex == nil || c.Hash == nil {
			return ch, fmt.Errorf("raw case needs bytes_hex and hash")
		}
		ch.Optional = protocol.OpRawHash
		add(protocol.Request{Op: protocol.OpRawHash, BytesHex: *c.BytesHex}, resultAnswer(protocol.OpRawHash, *c.Hash))
	default:
		return ch, fmt.Errorf("unknown case kind %q", c.Kind)
	}
	return ch, nil
}
