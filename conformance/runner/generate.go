package main

import (
	"fmt"
	"math/rand/v2"

	"github.com/kvhash/kvhash/conformance/testees/protocol"
)

// diffCase is one random differential case: a prompt with options, a chain
// over arbitrary locals and one chain step.
type diffCase struct {
	Tokens    []uint32
	BlockSize int64
	Options   protocol.Options
	Locals    []protocol.U64
	Parent    protocol.U64
	Local     protocol.U64
}

// requests are the case's requests, in a fixed order.
func (c diffCase) requests() []protocol.Request {
	return []protocol.Request{
		{Op: protocol.OpBlockHashes, Tokens: c.Tokens, BlockSize: c.BlockSize, Options: c.Options},
		{Op: protocol.OpSeed, LoraName: c.Options.LoraName, CacheNamespace: c.Options.CacheNamespace},
		{Op: protocol.OpSequenceHashes, BlockHashes: c.Locals},
		{Op: protocol.OpChainStep, Parent: c.Parent, Local: c.Local},
	}
}

// genLimits bound the random cases.
type genLimits struct {
	MaxTokens    int // 4096
	MaxBlockSize int // 512
}

// genCases draws n cases from seed. The same seed always gives the same
// cases, so a failure can be replayed with --seed.
func genCases(seed uint64, n int, lim genLimits) []diffCase {
	rng := rand.New(rand.NewPCG(seed, 0x6b76686173682d64)) // "kvhash-d"
	cases := make([]diffCase, n)
	for i := range cases {
		cases[i] = genCase(rng, lim)
	}
	return cases
}

func genCase(rng *rand.Rand, lim genLimits) diffCase {
	var c diffCase
	c.BlockSize = int64(genBlockSize(rng, lim.MaxBlockSize))
	c.Tokens = genTokens(rng, genLength(rng, lim.MaxTokens))
	if rng.IntN(100) < 30 {
		c.Options.LoraName = genName(rng)
	}
	if rng.IntN(100) < 30 {
		c.Options.CacheNamespace = genName(rng)
	}
	c.Options.Eagle = rng.IntN(100) < 20
	blocks := blockCount(len(c.Tokens), int(c.BlockSize), c.Options.Eagle)
	if rng.IntN(100) < 25 {
		c.Options.MMHashes = genMM(rng, rng.IntN(blocks+1))
	}
	// A few inputs every binding must reject.
	switch rng.IntN(100) {
	case 0:
		c.BlockSize = 0
	case 1:
		c.BlockSize = -int64(1 + rng.IntN(lim.MaxBlockSize))
	case 2:
		c.Options.MMHashes = genMM(rng, blocks+1+rng.IntN(3))
	}
	c.Locals = make([]protocol.U64, rng.IntN(41))
	for i := range c.Locals {
		c.Locals[i] = protocol.U64(genU64(rng))
	}
	c.Parent, c.Local = protocol.U64(genU64(rng)), protocol.U64(genU64(rng))
	return c
}

// blockCount mirrors the documented count rule only to size the mm list
// of a generated case; what a binding computes is checked against the
// oracle, not against this.
func blockCount(n, blockSize int, eagle bool) int {
	if blockSize <= 0 {
		return 0
	}
	if eagle {
		if n == 0 {
			return 0
		}
		return (n - 1) / blockSize
	}
	return n / blockSize
}

var usualBlockSizes = []int{1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 128, 256, 512}

func genBlockSize(rng *rand.Rand, maxSize int) int {
	if rng.IntN(2) == 0 {
		s := usualBlockSizes[rng.IntN(len(usualBlockSizes))]
		if s <= maxSize {
			return s
		}
	}
	return 1 + rng.IntN(maxSize)
}

// genLength favors short prompts (cheap, and where the edge cases are)
// but reaches the maximum.
func genLength(rng *rand.Rand, maxTokens int) int {
	switch p := rng.IntN(10); {
	case p < 5:
		return rng.IntN(min(65, maxTokens+1))
	case p < 8:
		return rng.IntN(min(513, maxTokens+1))
	}
	return rng.IntN(maxTokens + 1)
}

func genTokens(rng *rand.Rand, n int) []uint32 {
	tokens := make([]uint32, n)
	mode := rng.IntN(4)
	for i := range tokens {
		switch {
		case mode == 0:
			tokens[i] = rng.Uint32()
		case mode == 1:
			tokens[i] = uint32(rng.IntN(50000)) // a vocabulary
		case rng.IntN(8) == 0:
			tokens[i] = []uint32{0, 1, 1<<31 - 1, 1 << 31, 1<<32 - 2, 1<<32 - 1}[rng.IntN(6)]
		default:
			tokens[i] = rng.Uint32()
		}
	}
	return tokens
}

// nameRunes exercise the testees' JSON string handling: quotes,
// backslashes, control characters and non-ASCII.
var nameParts = []string{"a", "b", "lora", "tenant", "-", "_", " ", "é", "e\u0301", "日本", "🚀", `"`, `\`, "\n", "\t", "/", "\u007f", "\u2028"}

func genName(rng *rand.Rand) *string {
	if rng.IntN(10) == 0 {
		s := "" // counts as absent
		return &s
	}
	var s string
	if rng.IntN(20) == 0 {
		s = fmt.Sprintf("%0*d", 200+rng.IntN(800), 0) // a long name
	}
	for n := 1 + rng.IntN(8); n > 0; n-- {
		s += nameParts[rng.IntN(len(nameParts))]
	}
	return &s
}

func genMM(rng *rand.Rand, entries int) [][]protocol.U64 {
	mm := make([][]protocol.U64, entries)
	for i := range mm {
		switch p := rng.IntN(10); {
		case p < 3:
			mm[i] = nil
		case p < 4:
			mm[i] = []protocol.U64{}
		default:
			objs := make([]protocol.U64, 1+rng.IntN(4))
			for j := range objs {
				objs[j] = protocol.U64(genU64(rng))
			}
			if len(objs) > 1 && rng.IntN(5) == 0 {
				objs[1] = objs[0] // a duplicate object
			}
			mm[i] = objs
		}
	}
	return mm
}

func genU64(rng *rand.Rand) uint64 {
	switch rng.IntN(10) {
	case 0:
		return []uint64{0, 1, 1<<63 - 1, 1 << 63, 1<<64 - 1, 1 << 53, 1<<53 + 1}[rng.IntN(7)]
	case 1:
		return uint64(rng.IntN(1000))
	}
	return rng.Uint64()
}
