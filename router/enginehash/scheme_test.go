package enginehash

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseScheme(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Scheme
		err  bool
	}{
		{"vllm-sha256", VLLMSHA256, false},
		{"sha256", VLLMSHA256, false},
		{"sha256_cbor", VLLMSHA256CBOR, false},
		{"XXHASH_CBOR", VLLMXXHashCBOR, false},
		{"xxhash", VLLMXXHash, false},
		{"sglang_sha256", SGLangSHA256, false},
		{"trtllm-v2-sha256", TRTLLMV2SHA256, false},
		{"v2_sha256", "", true}, // TensorRT-LLM's own name is ambiguous without the engine
		{"md5", "", true},
		{"", "", true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseScheme(tc.in)
			if tc.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestDigestFromBytes(t *testing.T) {
	for _, n := range []int{0, 1, 7, 9, 15, 17, 31, 33} {
		_, err := DigestFromBytes(make([]byte, n))
		require.Error(t, err, "length %d", n)
	}
	b := []byte(strings.Repeat("\x01\x02", 8))
	d, err := DigestFromBytes(b)
	require.NoError(t, err)
	assert.Equal(t, b, d.Bytes())
	assert.Equal(t, 16, d.Len())
	assert.False(t, d.IsZero())
	back, err := ParseDigestHex(d.String())
	require.NoError(t, err)
	assert.Equal(t, d, back)
	_, err = ParseDigestHex("zz")
	require.Error(t, err)
	assert.True(t, Digest{}.IsZero())
}

// The wire id takes the documented end of the digest for each engine.
func TestWireIDSlices(t *testing.T) {
	var raw [32]byte
	for i := range raw {
		raw[i] = byte(i + 1)
	}
	d, err := DigestFromBytes(raw[:])
	require.NoError(t, err)
	assert.Equal(t, uint64(0x191a1b1c1d1e1f20), VLLMSHA256.WireID(d))
	assert.Equal(t, uint64(0x0102030405060708), SGLangSHA256.WireID(d))
	assert.Equal(t, uint64(0x0102030405060708), TRTLLMV2SHA256.WireID(d))
	raw[0] = 0xff
	d, err = DigestFromBytes(raw[:])
	require.NoError(t, err)
	assert.Less(t, SignedWireID(SGLangSHA256.WireID(d)), int64(0), "SGLang publishes the same bits signed")
	x, err := DigestFromBytes(raw[:16])
	require.NoError(t, err)
	assert.Equal(t, uint64(0x090a0b0c0d0e0f10), VLLMXXHash.WireID(x))
}

func TestBlockDigestErrors(t *testing.T) {
	root, err := VLLMRoot(VLLMSHA256CBOR, DefaultVLLMSeed)
	require.NoError(t, err)
	tokens := []uint32{1, 2, 3, 4}
	for _, tc := range []struct {
		name   string
		scheme Scheme
		parent Digest
		extra  []ExtraKey
	}{
		{"unknown scheme", "vllm-md5", root, nil},
		{"vLLM without a parent", VLLMSHA256, Digest{}, nil},
		{"TensorRT-LLM without a parent", TRTLLMV2SHA256, Digest{}, nil},
		{"SGLang with extra keys", SGLangSHA256, Digest{}, []ExtraKey{LoRAKey("a")}},
		{"TensorRT-LLM with extra keys", TRTLLMV2SHA256, root, []ExtraKey{SaltKey("s")}},
		{"unknown extra kind", VLLMSHA256, root, []ExtraKey{{Kind: 9}}},
		{"oversized extra string", VLLMSHA256, root, []ExtraKey{LoRAKey(strings.Repeat("x", 1<<16))}},
		{"oversized embeds", VLLMSHA256CBOR, root, []ExtraKey{PromptEmbedsKey(make([]byte, 1<<16))}},
		{"oversized mm identifier", VLLMXXHash, root, []ExtraKey{MMKey(strings.Repeat("x", 1<<16), 0)}},
		{"oversized LoRA path", VLLMXXHash, root, []ExtraKey{TaggedLoRAKey("a", strings.Repeat("x", 1<<16))}},
		{"TensorRT-LLM v1 key in a vLLM block", VLLMSHA256, root, []ExtraKey{TRTLLMSaltIDKey(1)}},
		{"vLLM key in a TensorRT-LLM v1 block", TRTLLMV1BlockKey, TRTLLMV1Root(), []ExtraKey{LoRAKey("a")}},
		{"TensorRT-LLM v1 on a SHA-256 parent", TRTLLMV1BlockKey, root, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.scheme.BlockDigest(tc.parent, tokens, tc.extra)
			require.Error(t, err)
		})
	}
	_, err = SGLangSHA256.LookaheadBlockDigest(Digest{}, tokens, nil, []uint32{1})
	require.Error(t, err, "lookahead is vLLM's")
	_, err = VLLMRoot(SGLangSHA256, "0")
	require.Error(t, err)
	_, err = VLLMRoot(VLLMSHA256, strings.Repeat("x", 1<<16))
	require.Error(t, err)
}

func TestChainErrorsAndPartialBlocks(t *testing.T) {
	root, err := VLLMRoot(VLLMSHA256, "0")
	require.NoError(t, err)
	_, err = Chain(nil, VLLMSHA256, root, []uint32{1}, 0, nil)
	require.Error(t, err)
	_, err = Chain(nil, SGLangSHA256, Digest{}, []uint32{1}, 1, &VLLMExtras{LoRAName: "a"})
	require.Error(t, err)
	_, err = Chain(nil, VLLMSHA256, root, []uint32{1, 2}, 1, &VLLMExtras{PromptEmbedsDigests: [][]byte{{1}}})
	require.Error(t, err, "a block without its prompt-embeds digest")

	blocks, err := Chain(nil, VLLMSHA256, root, []uint32{1, 2, 3, 4, 5}, 2, nil)
	require.NoError(t, err)
	assert.Len(t, blocks, 2, "the trailing partial block is not hashed")
	viaSeed, err := VLLMChain(nil, VLLMSHA256, "0", []uint32{1, 2, 3, 4, 5}, 2, nil)
	require.NoError(t, err)
	assert.Equal(t, blocks, viaSeed)
	_, err = VLLMChain(nil, SGLangSHA256, "0", nil, 2, nil)
	require.Error(t, err)
	_, err = Chain(nil, VLLMSHA256, root, []uint32{1, 2}, 1, &VLLMExtras{Lookahead: -1})
	require.Error(t, err)
	_, err = Chain(nil, VLLMSHA256, root, []uint32{1, 2}, 1, &VLLMExtras{Lookahead: 1, PromptEmbedsDigests: [][]byte{{1}}})
	require.Error(t, err, "lookahead with prompt embeds is refused")
	ahead, err := Chain(nil, VLLMSHA256, root, []uint32{1, 2, 3, 4, 5}, 2, &VLLMExtras{Lookahead: 2})
	require.NoError(t, err)
	assert.Len(t, ahead, 1, "the second block waits for its two lookahead tokens")
}

// BlockKeys follows vLLM's rules: LoRA everywhere, the salt on block 0,
// multimodal items on every block they overlap with the offset relative to
// the block, in the order LoRA, multimodal, salt, embeds.
func TestVLLMBlockKeys(t *testing.T) {
	x := &VLLMExtras{
		LoRAName:            "lora",
		CacheSalt:           "salt",
		MM:                  []MMItem{{Identifier: "img", Offset: 2, Length: 5}, {Identifier: "aud", Offset: 7, Length: 1}},
		PromptEmbedsDigests: [][]byte{{0}, {1}, {2}},
	}
	for _, tc := range []struct {
		block int
		want  []ExtraKey
	}{
		{0, []ExtraKey{LoRAKey("lora"), MMKey("img", 2), SaltKey("salt"), PromptEmbedsKey([]byte{0})}},
		{1, []ExtraKey{LoRAKey("lora"), MMKey("img", -2), MMKey("aud", 3), PromptEmbedsKey([]byte{1})}},
		{2, []ExtraKey{LoRAKey("lora"), PromptEmbedsKey([]byte{2})}},
	} {
		got, err := x.BlockKeys(tc.block, 4)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "block %d", tc.block)
	}
	tagged := &VLLMExtras{LoRAName: "lora", LoRAPath: "/p", CacheSalt: "salt", Tagged: true}
	got, err := tagged.BlockKeys(0, 4)
	require.NoError(t, err)
	assert.Equal(t, []ExtraKey{TaggedLoRAKey("lora", "/p"), SaltKey("salt").Tag()}, got)
	look := &VLLMExtras{MM: []MMItem{{Identifier: "img", Offset: 5, Length: 4}}, Lookahead: 2}
	got, err = look.BlockKeys(0, 4)
	require.NoError(t, err)
	assert.Equal(t, []ExtraKey{MMKey("img", 5)}, got, "the window [0, 6) reaches the item")
	got, err = look.BlockKeys(1, 4)
	require.NoError(t, err)
	assert.Equal(t, []ExtraKey{MMKey("img", 1)}, got, "the cursor was rewound to the open item")
	none := &VLLMExtras{}
	got, err = none.BlockKeys(0, 4)
	require.NoError(t, err)
	assert.Nil(t, got, "no extra keys is None, not an empty tuple")
	_, err = x.BlockKeys(-1, 4)
	require.Error(t, err)
	_, err = x.BlockKeys(3, 4)
	require.Error(t, err, "no embeds digest for block 3")
}

// FuzzBlockDigest: any tokens and extra keys under any scheme either hash or
// return an error, deterministically, and Chain agrees with BlockDigest.
func FuzzBlockDigest(f *testing.F) {
	f.Add(uint8(0), []byte{1, 2, 3, 4}, "lora", "img", int64(-5), []byte{7})
	f.Add(uint8(2), []byte{}, "", "", int64(1<<40), []byte(nil))
	f.Add(uint8(4), []byte{0xff, 0xff, 0xff, 0xff}, "a", "a", int64(-1<<63), []byte{})
	f.Fuzz(func(t *testing.T, schemeIdx uint8, raw []byte, s1, s2 string, off int64, b []byte) {
		if len(s1) > maxEncodedString || len(s2) > maxEncodedString || len(b) > maxEncodedString {
			t.Skip("over the documented limit (tested in TestBlockDigestErrors)")
		}
		schemes := Schemes()
		s := schemes[int(schemeIdx)%len(schemes)]
		tokens := make([]uint32, 0, len(raw)/4)
		for i := 0; i+4 <= len(raw); i += 4 {
			tokens = append(tokens, uint32(raw[i])|uint32(raw[i+1])<<8|uint32(raw[i+2])<<16|uint32(raw[i+3])<<24)
		}
		var root Digest
		var extra []ExtraKey
		switch {
		case s.IsVLLM():
			var err error
			root, err = VLLMRoot(s, s1)
			require.NoError(t, err)
			extra = []ExtraKey{LoRAKey(s1), MMKey(s2, off), PromptEmbedsKey(b)}
		case s == SGLangSHA256:
			root = SGLangRoot(s1)
		case s == TRTLLMV1BlockKey:
			root = TRTLLMV1Root()
			extra = []ExtraKey{TRTLLMSaltIDKey(uint64(off)), TRTLLMLoRATaskKey(uint64(len(b)))}
		default:
			root = TRTLLMRoot(TRTLLMScope{LoRAID: new(uint64(off))})
		}
		d1, err1 := s.BlockDigest(root, tokens, extra)
		d2, err2 := s.BlockDigest(root, tokens, extra)
		require.Equal(t, err1 == nil, err2 == nil)
		require.Equal(t, d1, d2)
		require.NoError(t, err1, "every input here is valid")
		if len(tokens) == 0 || s.IsVLLM() || s == TRTLLMV1BlockKey {
			return
		}
		chain, err := Chain(nil, s, root, tokens, len(tokens), nil)
		require.NoError(t, err)
		require.Len(t, chain, 1)
		require.Equal(t, d1, chain[0].Digest)
		require.Equal(t, s.WireID(d1), chain[0].WireID)
	})
}

func FuzzParseScheme(f *testing.F) {
	for _, s := range Schemes() {
		f.Add(string(s))
	}
	f.Add("SHA256_CBOR")
	f.Fuzz(func(t *testing.T, name string) {
		s, err := ParseScheme(name)
		if err != nil {
			return
		}
		again, err := ParseScheme(string(s))
		require.NoError(t, err)
		require.Equal(t, s, again, "a parsed name parses to itself")
	})
}
