package enginehash

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// oracleCase is one chain as testdata/oracle.py writes it (see its docstring).
type oracleCase struct {
	Name         string         `json:"name,omitempty"`
	Scheme       Scheme         `json:"scheme"`
	Seed         *string        `json:"seed,omitempty"`
	Salt         string         `json:"salt,omitempty"`
	LoRAID       *uint64        `json:"lora_id,omitempty"`
	Eagle        bool           `json:"eagle,omitempty"`
	BlockSize    int            `json:"block_size"`
	Tokens       []uint32       `json:"tokens,omitempty"`
	TokensGolden int            `json:"tokens_golden,omitempty"`
	Extras       *oracleExtras  `json:"extras,omitempty"`
	Root         string         `json:"root,omitempty"`
	Blocks       []oracleResult `json:"blocks,omitempty"`
}

type oracleExtras struct {
	LoRA      string   `json:"lora,omitempty"`
	LoRAPath  string   `json:"lora_path,omitempty"`
	Salt      string   `json:"salt,omitempty"`
	MM        [][3]any `json:"mm,omitempty"`
	Embeds    []string `json:"embeds,omitempty"`
	Tagged    bool     `json:"tagged,omitempty"`
	Lookahead int      `json:"lookahead,omitempty"`
}

type oracleResult struct {
	ExtraKeys []oracleKey `json:"extra_keys"`
	Digest    string      `json:"digest"`
	EventInt  json.Number `json:"event_int"`
	Tagged    bool        `json:"tagged,omitempty"`
	Lookahead []uint32    `json:"lookahead,omitempty"`
}

type oracleKey struct {
	LoRA   *string `json:"lora,omitempty"`
	Path   string  `json:"path,omitempty"`
	MM     []any   `json:"mm,omitempty"`
	Salt   *string `json:"salt,omitempty"`
	Embeds *string `json:"embeds,omitempty"`
}

type oracleFile struct {
	Chains []oracleCase `json:"chains"`
}

func loadVectors(t testing.TB) []oracleCase {
	t.Helper()
	raw, err := os.ReadFile("testdata/vectors.json")
	require.NoError(t, err)
	var f oracleFile
	dec := json.NewDecoder(bytesReader(raw))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&f))
	require.NotEmpty(t, f.Chains)
	return f.Chains
}

// tokens are the case's tokens as the scheme hashes them (SGLang EAGLE:
// the flattened bigrams).
func (c *oracleCase) tokens() []uint32 {
	if c.Eagle {
		return SGLangBigrams(nil, c.rawTokens())
	}
	return c.rawTokens()
}

// hashBlockSize is the block size over tokens().
func (c *oracleCase) hashBlockSize() int {
	if c.Eagle {
		return 2 * c.BlockSize
	}
	return c.BlockSize
}

func (c *oracleCase) rawTokens() []uint32 {
	if c.TokensGolden > 0 {
		out := make([]uint32, c.TokensGolden)
		for i := range out {
			out[i] = uint32(i) * 2654435761
		}
		return out
	}
	return c.Tokens
}

// root is the case's root digest, computed by this package.
func (c *oracleCase) root() (Digest, error) {
	switch {
	case c.Scheme.IsVLLM():
		if c.Seed == nil {
			return Digest{}, fmt.Errorf("vLLM case without a seed")
		}
		return VLLMRoot(c.Scheme, *c.Seed)
	case c.Scheme == SGLangSHA256:
		return SGLangRoot(c.Salt), nil
	case c.Scheme == TRTLLMV1BlockKey:
		return TRTLLMV1Root(), nil
	case c.Scheme == TRTLLMV2SHA256:
		scope := TRTLLMScope{LoRAID: c.LoRAID}
		if c.Salt != "" {
			id := TRTLLMSaltID(c.Salt)
			scope.SaltID = &id
		}
		return TRTLLMRoot(scope), nil
	}
	return Digest{}, fmt.Errorf("unknown scheme %q", c.Scheme)
}

func (c *oracleCase) vllmExtras(t testing.TB) *VLLMExtras {
	if c.Extras == nil {
		return nil
	}
	x := &VLLMExtras{LoRAName: c.Extras.LoRA, LoRAPath: c.Extras.LoRAPath, CacheSalt: c.Extras.Salt,
		Tagged: c.Extras.Tagged, Lookahead: c.Extras.Lookahead}
	for _, m := range c.Extras.MM {
		x.MM = append(x.MM, MMItem{Identifier: m[0].(string), Offset: int(anyInt(t, m[1])), Length: int(anyInt(t, m[2]))})
	}
	if c.Extras.Embeds != nil {
		x.PromptEmbedsDigests = [][]byte{}
		for _, h := range c.Extras.Embeds {
			b, err := hex.DecodeString(h)
			require.NoError(t, err)
			x.PromptEmbedsDigests = append(x.PromptEmbedsDigests, b)
		}
	}
	return x
}

// extraKeys converts the oracle's explicit per-block keys, in the block's
// form (tagged or not).
func (r *oracleResult) extraKeys(t testing.TB) []ExtraKey {
	var out []ExtraKey
	for _, k := range r.ExtraKeys {
		var key ExtraKey
		switch {
		case k.LoRA != nil:
			key = ExtraKey{Kind: ExtraLoRA, Text: *k.LoRA, Path: k.Path}
		case k.MM != nil:
			key = MMKey(k.MM[0].(string), anyInt(t, k.MM[1]))
		case k.Salt != nil:
			key = SaltKey(*k.Salt)
		case k.Embeds != nil:
			b, err := hex.DecodeString(*k.Embeds)
			require.NoError(t, err)
			key = PromptEmbedsKey(b)
		default:
			t.Fatalf("empty extra key in %+v", r)
		}
		key.Tagged = r.Tagged
		out = append(out, key)
	}
	return out
}

func (r *oracleResult) eventU64(t testing.TB) uint64 {
	s := r.EventInt.String()
	if len(s) > 0 && s[0] == '-' {
		v, err := r.EventInt.Int64()
		require.NoError(t, err)
		return uint64(v)
	}
	var v uint64
	_, err := fmt.Sscan(s, &v)
	require.NoError(t, err)
	return v
}

// anyInt reads an int from a case built in Go (int, int64) or decoded from
// JSON (json.Number).
func anyInt(t testing.TB, v any) int64 {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int64:
		return x
	case json.Number:
		n, err := x.Int64()
		require.NoError(t, err)
		return n
	}
	t.Fatalf("not an int: %T %v", v, v)
	return 0
}

// v1Keys are TensorRT-LLM v1's per-block keys for block i of the case.
func (c *oracleCase) v1Keys(i int) []ExtraKey {
	var keys []ExtraKey
	if c.Salt != "" && i == 0 {
		keys = append(keys, TRTLLMSaltIDKey(TRTLLMSaltID(c.Salt)))
	}
	if c.LoRAID != nil {
		keys = append(keys, TRTLLMLoRATaskKey(*c.LoRAID))
	}
	return keys
}

// blockKeys are block i's extra keys: the oracle's for vLLM, the salt and
// LoRA ids for TensorRT-LLM v1.
func (c *oracleCase) blockKeys(t testing.TB, i int) []ExtraKey {
	if c.Scheme == TRTLLMV1BlockKey {
		return c.v1Keys(i)
	}
	return c.Blocks[i].extraKeys(t)
}

// chain hashes the whole case through this package's chain helpers.
func (c *oracleCase) chain(t testing.TB, root Digest) ([]Block, error) {
	if c.Scheme == TRTLLMV1BlockKey {
		var salt *uint64
		if c.Salt != "" {
			id := TRTLLMSaltID(c.Salt)
			salt = &id
		}
		return TRTLLMV1Chain(nil, c.tokens(), c.BlockSize, salt, c.LoRAID)
	}
	if c.Eagle {
		return SGLangEagleChain(nil, root, c.rawTokens(), c.BlockSize)
	}
	return Chain(nil, c.Scheme, root, c.tokens(), c.BlockSize, c.vllmExtras(t))
}
