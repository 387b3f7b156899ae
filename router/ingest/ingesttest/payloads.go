// Package ingesttest builds realistic engine payloads (vLLM's wire, both
// event encodings) for ingestion tests and benchmarks: the decoder's own,
// and the end-to-end decode + hash + apply benchmark assembled with the
// indexer.
package ingesttest

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Layout is how events are encoded.
type Layout uint8

const (
	// MapEvents: each event a map tagged "type" (vLLM >= 0.24, SGLang).
	MapEvents Layout = iota
	// ArrayEvents: each event a positional array, tag first (older vLLM).
	ArrayEvents
)

func (l Layout) String() string {
	if l == ArrayEvents {
		return "array"
	}
	return "map"
}

// Spec describes a stream of batches as an engine under load emits them:
// each batch holds Events BlockStored events of BlocksPerEvent blocks of
// BlockSize tokens, each event extending a prompt chain (its parent the
// previous event's last block), with a BlockRemoved every RemoveEvery
// events (0: never).
type Spec struct {
	Layout         Layout
	Events         int
	BlocksPerEvent int
	BlockSize      int
	BytesHashes    bool // 32-byte digests (vLLM's sha256) instead of u64 ints
	RemoveEvery    int
	DPRank         uint32
	Seed           uint64
}

// DefaultSpec is a realistic vLLM batch: 16-token blocks, 8 prefills of
// 16 blocks (256 tokens) each per engine step.
func DefaultSpec(l Layout) Spec {
	return Spec{Layout: l, Events: 8, BlocksPerEvent: 16, BlockSize: 16, Seed: 1}
}

// Generator produces payloads for a Spec; successive batches continue the
// same chains, so that an index applying them in order finds every parent.
type Generator struct {
	spec   Spec
	rng    uint64
	next   uint64 // the next engine hash
	chains []uint64
	buf    bytes.Buffer
	enc    *msgpack.Encoder
}

// NewGenerator returns a Generator for spec.
func NewGenerator(spec Spec) *Generator {
	if spec.BlockSize <= 0 || spec.BlocksPerEvent <= 0 || spec.Events <= 0 {
		panic(fmt.Sprintf("ingesttest: invalid spec %+v", spec))
	}
	g := &Generator{spec: spec, rng: spec.Seed*0x9E3779B97F4A7C15 + 1, next: spec.Seed<<32 + 1}
	g.enc = msgpack.NewEncoder(&g.buf)
	return g
}

// BlocksPerBatch is the number of stored blocks in each batch.
func (g *Generator) BlocksPerBatch() int { return g.spec.Events * g.spec.BlocksPerEvent }

// Payloads returns n successive payloads.
func (g *Generator) Payloads(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = g.Next()
	}
	return out
}

// Next returns the next batch's payload (a fresh slice).
func (g *Generator) Next() []byte {
	g.buf.Reset()
	g.must(g.batch())
	return bytes.Clone(g.buf.Bytes())
}

func (g *Generator) must(err error) {
	if err != nil {
		panic(fmt.Sprintf("ingesttest: encoding: %v", err)) // only a bug can fail here
	}
}

func (g *Generator) rand() uint64 {
	g.rng ^= g.rng << 13
	g.rng ^= g.rng >> 7
	g.rng ^= g.rng << 17
	return g.rng
}

func (g *Generator) batch() error {
	e := g.enc
	n := g.spec.Events
	removes := 0
	if g.spec.RemoveEvery > 0 {
		removes = n / g.spec.RemoveEvery
	}
	if err := e.EncodeArrayLen(3); err != nil {
		return err
	}
	if err := e.EncodeFloat64(1764570000 + float64(g.next)/1e6); err != nil {
		return err
	}
	if err := e.EncodeArrayLen(n + removes); err != nil {
		return err
	}
	for i := range n {
		if err := g.stored(); err != nil {
			return err
		}
		if g.spec.RemoveEvery > 0 && (i+1)%g.spec.RemoveEvery == 0 {
			if err := g.removed(); err != nil {
				return err
			}
		}
	}
	return e.EncodeUint(uint64(g.spec.DPRank))
}

// header writes an event's start: the map header and tag, or the array
// header and tag.
func (g *Generator) header(tag string, fields int) error {
	if g.spec.Layout == ArrayEvents {
		if err := g.enc.EncodeArrayLen(1 + fields); err != nil {
			return err
		}
		return g.enc.EncodeString(tag)
	}
	if err := g.enc.EncodeMapLen(1 + fields); err != nil {
		return err
	}
	if err := g.enc.EncodeString("type"); err != nil {
		return err
	}
	return g.enc.EncodeString(tag)
}

func (g *Generator) key(name string) error {
	if g.spec.Layout == ArrayEvents {
		return nil
	}
	return g.enc.EncodeString(name)
}

func (g *Generator) hash(h uint64) error {
	if !g.spec.BytesHashes {
		return g.enc.EncodeUint(h)
	}
	var d [32]byte
	binary.LittleEndian.PutUint64(d[:], g.rand())
	binary.BigEndian.PutUint64(d[24:], h)
	return g.enc.EncodeBytes(d[:])
}

// stored writes one BlockStored with the fields vLLM always sends.
func (g *Generator) stored() error {
	e := g.enc
	if err := g.header("BlockStored", 7); err != nil {
		return err
	}
	bpe, bs := g.spec.BlocksPerEvent, g.spec.BlockSize
	// Half the events start a new prompt; the others extend one (so the
	// parent is set and the index must find it).
	var parent *uint64
	if len(g.chains) > 0 && g.rand()%2 == 0 {
		i := int(g.rand() % uint64(len(g.chains)))
		p := g.chains[i]
		parent = &p
	}
	if err := g.key("block_hashes"); err != nil {
		return err
	}
	if err := e.EncodeArrayLen(bpe); err != nil {
		return err
	}
	first := g.next
	for range bpe {
		if err := g.hash(g.next); err != nil {
			return err
		}
		g.next++
	}
	if len(g.chains) < 64 {
		g.chains = append(g.chains, g.next-1)
	} else {
		g.chains[int(first)%64] = g.next - 1
	}
	if err := g.key("parent_block_hash"); err != nil {
		return err
	}
	if parent == nil {
		if err := e.EncodeNil(); err != nil {
			return err
		}
	} else if err := g.hash(*parent); err != nil {
		return err
	}
	if err := g.key("token_ids"); err != nil {
		return err
	}
	if err := e.EncodeArrayLen(bpe * bs); err != nil {
		return err
	}
	for range bpe * bs {
		if err := e.EncodeUint(g.rand() % 151_936); err != nil { // a Qwen-sized vocabulary
			return err
		}
	}
	for _, f := range []struct {
		name string
		put  func() error
	}{
		{"block_size", func() error { return e.EncodeInt(int64(bs)) }},
		{"lora_id", e.EncodeNil},
		{"medium", func() error { return e.EncodeString("GPU") }},
		{"lora_name", e.EncodeNil},
	} {
		if err := g.key(f.name); err != nil {
			return err
		}
		if err := f.put(); err != nil {
			return err
		}
	}
	return nil
}

func (g *Generator) removed() error {
	if err := g.header("BlockRemoved", 2); err != nil {
		return err
	}
	if err := g.key("block_hashes"); err != nil {
		return err
	}
	if err := g.enc.EncodeArrayLen(1); err != nil {
		return err
	}
	if err := g.hash(g.next - 1 - g.rand()%uint64(g.spec.BlocksPerEvent)); err != nil {
		return err
	}
	if err := g.key("medium"); err != nil {
		return err
	}
	return g.enc.EncodeString("GPU")
}
