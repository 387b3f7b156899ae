package enginehash

import "testing"

func benchTokens(n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(i) * 2654435761 >> 15 // realistic token ids: below 2^17
	}
	return out
}

// One 16-token block per scheme, no extra keys (the common case).
func BenchmarkBlockDigest16(b *testing.B) {
	tokens := benchTokens(16)
	for _, s := range Schemes() {
		b.Run(string(s), func(b *testing.B) {
			var root Digest
			if s.IsVLLM() {
				root, _ = VLLMRoot(s, DefaultVLLMSeed)
			} else if s == TRTLLMV2SHA256 {
				root = TRTLLMRoot(TRTLLMScope{})
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.BlockDigest(root, tokens, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A 4096-token prompt at block size 16, the block slice reused.
func BenchmarkChain4096(b *testing.B) {
	tokens := benchTokens(4096)
	for _, s := range []Scheme{VLLMSHA256, VLLMSHA256CBOR, SGLangSHA256} {
		b.Run(string(s), func(b *testing.B) {
			root, _ := VLLMRoot(VLLMSHA256, "0")
			if s == SGLangSHA256 {
				root = Digest{}
			}
			dst := make([]Block, 0, 256)
			b.ReportAllocs()
			b.SetBytes(int64(len(tokens) * 4))
			for b.Loop() {
				var err error
				if dst, err = Chain(dst[:0], s, root, tokens, 16, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Verifying one root store against every default candidate (what `auto`
// does once per worker, on its first root stores).
func BenchmarkVerifierMatch(b *testing.B) {
	v, err := NewVerifier(DefaultCandidates())
	if err != nil {
		b.Fatal(err)
	}
	st := RootStore{Tokens: benchTokens(16), WireID: 1}
	b.ReportAllocs()
	for b.Loop() {
		if len(v.Match(st)) != 0 {
			b.Fatal("unexpected match")
		}
	}
}
