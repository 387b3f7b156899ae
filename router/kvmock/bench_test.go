package kvmock

import (
	"context"
	"testing"
)

// BenchmarkGenerate is the engine's own cost per request (time model
// switched off by a huge speedup): hashing a 1024-token prompt into vLLM's
// sha256_cbor ids, the cache lookup and allocation, the events. It bounds
// how many requests one kvmock process can simulate per second.
func BenchmarkGenerate(b *testing.B) {
	cfg := testConfig()
	cfg.BlockSize = 16
	cfg.NumBlocks = 4096
	cfg.MaxModelLen = 4096
	cfg.VocabSize = 32000
	cfg.Speedup = 1e12
	ids, err := NewBlockIDs(cfg)
	if err != nil {
		b.Fatal(err)
	}
	for _, shared := range []struct {
		name   string
		reused bool
	}{{"cold", false}, {"cached", true}} {
		b.Run(shared.name, func(b *testing.B) {
			e, err := NewEngine(cfg, ids, discardEvents{})
			if err != nil {
				b.Fatal(err)
			}
			prompt := seqTokens(1, 1024)
			noop := func(Token, Timings) error { return nil }
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if !shared.reused {
					prompt[0] = uint32(i % 900) // a new first block: nothing reused
				}
				if _, err := e.Generate(context.Background(), GenRequest{Prompt: prompt, MaxTokens: 1}, noop); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncodeBatch is the wire encoder on a typical step: one
// BlockStored of 64 blocks of 16 tokens and a few removals.
func BenchmarkEncodeBatch(b *testing.B) {
	ids := newTestIDs()
	tokens := seqTokens(1, 64*16)
	chain, err := appendChain(nil, ids, SeqTag{}, tokens, 16)
	if err != nil {
		b.Fatal(err)
	}
	events := []Event{
		{Kind: EventBlockStored, Digests: chain, Tokens: tokens},
		{Kind: EventBlockRemoved, Digests: chain[:1]},
		{Kind: EventBlockRemoved, Digests: chain[1:2]},
	}
	for _, format := range []EventFormat{EventFormatMap, EventFormatArray} {
		b.Run(string(format), func(b *testing.B) {
			enc := wireEncoder{format: format, hashes: HashFormatInt, blockSize: 16}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := enc.encodeBatch(1.5, events, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
