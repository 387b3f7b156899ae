package enginehash

import (
	"crypto/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every vector's first block is a root store: the verifier must name exactly
// the vector's scheme and seed among all candidates.
func TestVerifierNamesTheOracleSchemeAndSeed(t *testing.T) {
	cases := loadVectors(t)
	var seeds []string
	for _, c := range cases {
		if c.Seed != nil {
			seeds = append(seeds, *c.Seed)
		}
	}
	v, err := NewVerifier(DefaultCandidates(seeds...))
	require.NoError(t, err)
	for _, c := range cases {
		if len(c.Blocks) == 0 {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			st := RootStore{
				Tokens:       c.tokens()[:c.hashBlockSize()],
				ExtraKeys:    untag(c.Blocks[0].extraKeys(t)), // as events carry them
				Lookahead:    c.Blocks[0].Lookahead,
				CacheSalt:    c.Salt,
				TRTLLMLoRAID: c.LoRAID,
				WireID:       c.Blocks[0].eventU64(t),
			}
			want := Candidate{Scheme: c.Scheme}
			if c.Seed != nil {
				want.Seed = *c.Seed
			}
			if c.Extras != nil {
				st.LoRAPath = c.Extras.LoRAPath
			}
			got := v.Match(st)
			require.Len(t, got, 1, "matches: %v", got)
			assert.Equal(t, want, got[0].Candidate)
			assert.Equal(t, c.Blocks[0].Tagged && len(st.ExtraKeys) > 0, got[0].TaggedKeys)
			assert.Equal(t, c.Blocks[0].Digest, got[0].Digest.String())
		})
	}
}

// A random root (vLLM without PYTHONHASHSEED before its fix, or any xxhash
// engine without it) matches no candidate: that is what "unstable" means.
func TestVerifierRandomRootMatchesNothing(t *testing.T) {
	v, err := NewVerifier(DefaultCandidates("1", "2"))
	require.NoError(t, err)
	tokens := []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	for _, s := range []Scheme{VLLMSHA256, VLLMSHA256CBOR, VLLMXXHash, VLLMXXHashCBOR} {
		var random [32]byte
		_, err := rand.Read(random[:])
		require.NoError(t, err)
		n := 32
		if s == VLLMXXHash || s == VLLMXXHashCBOR {
			n = 16 // an xxhash root is itself an XXH3-128 digest
		}
		root, err := DigestFromBytes(random[:n])
		require.NoError(t, err)
		d, err := s.BlockDigest(root, tokens, nil)
		require.NoError(t, err)
		assert.Empty(t, v.Match(RootStore{Tokens: tokens, WireID: s.WireID(d)}), string(s))
	}
}

func TestNewVerifierRejectsBadCandidates(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Candidate
	}{
		{"unknown scheme", Candidate{Scheme: "md5"}},
		{"seed on sglang", Candidate{Scheme: SGLangSHA256, Seed: "0"}},
		{"seed on trtllm", Candidate{Scheme: TRTLLMV2SHA256, Seed: "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewVerifier([]Candidate{tc.c})
			require.Error(t, err)
		})
	}
}

func TestDefaultCandidates(t *testing.T) {
	got := DefaultCandidates("0", "7")
	assert.Equal(t, Candidate{Scheme: VLLMSHA256, Seed: DefaultVLLMSeed}, got[0])
	assert.Contains(t, got, Candidate{Scheme: VLLMXXHashCBOR, Seed: "7"})
	assert.NotContains(t, got, Candidate{Scheme: VLLMXXHash, Seed: DefaultVLLMSeed}, "xxhash never uses the fixed seed")
	seen := map[Candidate]bool{}
	for _, c := range got {
		assert.False(t, seen[c], "duplicate %v", c)
		seen[c] = true
	}
	assert.Equal(t, `vllm-sha256 seed="0"`, Candidate{Scheme: VLLMSHA256, Seed: "0"}.String())
	assert.Equal(t, "sglang-sha256", Candidate{Scheme: SGLangSHA256}.String())
}

func TestExtraKeysFromValues(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      []any
		lora    string
		want    []ExtraKey
		wantErr bool
	}{
		{"none", nil, "", nil, false},
		{"lora, mm, salt, embeds", []any{"lora-a", []any{"img", int64(-3)}, "salt", []byte{1, 2}}, "lora-a",
			[]ExtraKey{LoRAKey("lora-a"), MMKey("img", -3), SaltKey("salt"), PromptEmbedsKey([]byte{1, 2})}, false},
		{"a string without a LoRA is the salt", []any{"salt"}, "", []ExtraKey{SaltKey("salt")}, false},
		{"mm offset as uint64", []any{[]any{"img", uint64(5)}}, "", []ExtraKey{MMKey("img", 5)}, false},
		{"mm offset as int", []any{[]any{"img", 5}}, "", []ExtraKey{MMKey("img", 5)}, false},
		{"mm offset too large", []any{[]any{"img", uint64(1 << 63)}}, "", nil, true},
		{"mm of three", []any{[]any{"img", int64(1), int64(2)}}, "", nil, true},
		{"mm id not a string", []any{[]any{int64(1), int64(2)}}, "", nil, true},
		{"mm offset not an int", []any{[]any{"img", "x"}}, "", nil, true},
		{"float", []any{1.5}, "", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ExtraKeysFromValues(tc.in, tc.lora)
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestRootStoreConclusive(t *testing.T) {
	assert.True(t, RootStore{}.Conclusive())
	assert.True(t, RootStore{ExtraKeys: []ExtraKey{SaltKey("s"), MMKey("i", 0)}}.Conclusive())
	assert.False(t, RootStore{ExtraKeys: []ExtraKey{LoRAKey("a")}}.Conclusive(), "vLLM 0.33 hashes the path the event lacks")
	assert.True(t, RootStore{ExtraKeys: []ExtraKey{LoRAKey("a")}, LoRAPath: "/p"}.Conclusive())
}
