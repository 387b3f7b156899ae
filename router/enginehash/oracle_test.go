package enginehash

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// The committed vectors are exactly what the oracle generates today: a change
// to oracle.py (or to CPython's pickle, cbor2 or xxhash) shows here first.
func TestOracleVectorsDoNotDrift(t *testing.T) {
	got := runOracle(t, "generate", nil)
	want, err := os.ReadFile(filepath.Join("testdata", "vectors.json"))
	require.NoError(t, err)
	if !bytes.Equal(want, got) {
		t.Fatalf("testdata/vectors.json differs from `oracle.py generate` (%d vs %d bytes): regenerate it and review the diff",
			len(want), len(got))
	}
}

// randomCase draws a case over every scheme, the token ranges where pickle's
// int opcodes change, and every kind of vLLM extra key.
func randomCase(r *rand.Rand) oracleCase {
	schemes := Schemes()
	c := oracleCase{Scheme: schemes[r.IntN(len(schemes))], BlockSize: 1 + r.IntN(20)}
	n := c.BlockSize*r.IntN(4) + r.IntN(c.BlockSize)
	widths := []uint{1, 8, 9, 16, 17, 31, 32}
	for range n {
		w := widths[r.IntN(len(widths))]
		c.Tokens = append(c.Tokens, uint32(r.Uint64()&(1<<w-1)))
	}
	if c.Tokens == nil {
		c.Tokens = []uint32{}
	}
	str := func() string {
		alphabet := []string{"a", "b", "é", "ÿ", "Ā", "漢", "-", "0"}
		var s string
		for range r.IntN(5) {
			s += alphabet[r.IntN(len(alphabet))]
		}
		return s
	}
	switch {
	case c.Scheme.IsVLLM():
		seed := str()
		c.Seed = &seed
		if r.IntN(2) == 0 {
			x := &oracleExtras{}
			x.Tagged = r.IntN(2) == 0
			if r.IntN(2) == 0 {
				x.LoRA = str()
				x.LoRAPath = str()
			}
			if r.IntN(2) == 0 {
				x.Salt = str()
			}
			off := r.IntN(n + 1)
			for range r.IntN(4) {
				length := 1 + r.IntN(2*c.BlockSize)
				x.MM = append(x.MM, [3]any{str(), off, length})
				off += length + r.IntN(c.BlockSize)
			}
			if r.IntN(4) == 0 {
				x.Lookahead = 1 + r.IntN(3)
			} else if r.IntN(3) == 0 {
				for range n/c.BlockSize + 1 {
					b := make([]byte, []int{0, 1, 32}[r.IntN(3)])
					for i := range b {
						b[i] = byte(r.IntN(256))
					}
					x.Embeds = append(x.Embeds, hex.EncodeToString(b))
				}
			}
			c.Extras = x
		}
	case c.Scheme == SGLangSHA256:
		c.Salt = str()
		c.Eagle = r.IntN(3) == 0
	default:
		c.Salt = str()
		if r.IntN(2) == 0 {
			id := r.Uint64()
			c.LoRAID = &id
		}
	}
	return c
}

// checkAgainstOracle compares this package with the oracle's answer for c.
func checkAgainstOracle(t *testing.T, c oracleCase) {
	t.Helper()
	root, err := c.root()
	require.NoError(t, err)
	require.Equal(t, c.Root, root.String(), "root of %+v", c)
	chain, err := c.chain(t, root)
	require.NoError(t, err)
	require.Len(t, chain, len(c.Blocks))
	parent := root
	for i, want := range c.Blocks {
		require.Equal(t, want.Digest, chain[i].Digest.String(), "chain block %d of %+v", i, c)
		require.Equal(t, want.eventU64(t), chain[i].WireID, "chain block %d wire id", i)
		d, err := c.Scheme.LookaheadBlockDigest(parent, c.tokens()[i*c.hashBlockSize():(i+1)*c.hashBlockSize()], c.blockKeys(t, i), want.Lookahead)
		require.NoError(t, err)
		require.Equal(t, want.Digest, d.String(), "block %d digest from the oracle's keys", i)
		parent = d
	}
}

// A bounded property test: 500 random cases, one oracle subprocess.
func TestRandomCasesAgainstOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 5))
	cases := make([]oracleCase, 500)
	for i := range cases {
		cases[i] = randomCase(r)
	}
	in, err := json.Marshal(cases)
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(runOracle(t, "batch", in)))
	dec.UseNumber()
	var results []oracleCase
	require.NoError(t, dec.Decode(&results))
	require.Len(t, results, len(cases))
	kinds := map[string]int{}
	for i := range cases {
		cases[i].Root, cases[i].Blocks = results[i].Root, results[i].Blocks
		checkAgainstOracle(t, cases[i])
		for _, b := range cases[i].Blocks {
			for _, k := range b.ExtraKeys {
				switch {
				case k.LoRA != nil:
					kinds["lora"]++
				case k.MM != nil:
					kinds["mm"]++
				case k.Salt != nil:
					kinds["salt"]++
				case k.Embeds != nil:
					kinds["embeds"]++
				}
			}
			if b.Tagged {
				kinds["tagged"]++
			}
			if b.Lookahead != nil {
				kinds["lookahead"]++
			}
		}
	}
	// The generator must keep reaching every kind of extra key.
	for _, kind := range []string{"lora", "mm", "salt", "embeds", "tagged", "lookahead"} {
		require.Greater(t, kinds[kind], 20, "blocks with %s extra keys", kind)
	}
}

// FuzzChainAgainstOracle hashes fuzzed tokens and extra keys with every
// scheme and asks the Python oracle (one long-lived process) for the same.
func FuzzChainAgainstOracle(f *testing.F) {
	f.Add(uint8(0), "0", []byte{1, 0, 0, 0, 2, 0, 0, 0}, uint8(2), "", "", "", int64(0), uint8(0))
	f.Add(uint8(1), "vllm-none-hash", []byte("sixteen token bytes of input...."), uint8(4), "lora-a", "salt", "img", int64(1), uint8(6))
	f.Add(uint8(2), "x", []byte{0xff, 0xff, 0xff, 0xff}, uint8(1), "a", "a", "a", int64(-1), uint8(2))
	f.Add(uint8(3), "42", []byte{0, 0, 0, 0x80, 1, 2, 3, 4}, uint8(1), "", "t", "", int64(0), uint8(0))
	f.Add(uint8(4), "", []byte{9, 9, 9, 9}, uint8(1), "", "tenant", "", int64(0), uint8(0))
	f.Add(uint8(5), "", []byte{9, 9, 9, 9, 8, 8, 8, 8}, uint8(2), "", "tenant", "", int64(7), uint8(0))
	srv := oracleServe(f)
	f.Fuzz(func(t *testing.T, schemeIdx uint8, seed string, raw []byte, blockSize uint8,
		lora, salt, mmID string, mmOffset int64, mmLen uint8) {
		for _, s := range []string{seed, lora, salt, mmID} {
			if !utf8.ValidString(s) || len(s) > 300 {
				t.Skip("engines' strings are valid UTF-8 (Python str) and short")
			}
		}
		schemes := Schemes()
		c := oracleCase{Scheme: schemes[int(schemeIdx)%len(schemes)], BlockSize: 1 + int(blockSize)%32}
		c.Tokens = []uint32{}
		for i := 0; i+4 <= len(raw) && len(c.Tokens) < 256; i += 4 {
			c.Tokens = append(c.Tokens, uint32(raw[i])|uint32(raw[i+1])<<8|uint32(raw[i+2])<<16|uint32(raw[i+3])<<24)
		}
		switch {
		case c.Scheme.IsVLLM():
			c.Seed = &seed
			x := &oracleExtras{LoRA: lora, LoRAPath: mmID, Salt: salt, Tagged: mmLen%2 == 1, Lookahead: int(blockSize>>5) % 3}
			if mmLen > 0 {
				off := mmOffset % 1024
				if off < 0 {
					off = -off
				}
				x.MM = [][3]any{{mmID, off, int(mmLen)}}
			}
			c.Extras = x
		default:
			c.Salt = salt
			if c.Scheme == TRTLLMV2SHA256 && mmOffset != 0 {
				id := uint64(mmOffset)
				c.LoRAID = &id
			}
		}
		got, err := srv.run(c)
		require.NoError(t, err)
		checkAgainstOracle(t, reparse(t, got))
	})
}

// reparse round-trips a case through JSON so its generic fields (mm triples)
// have the types loadVectors gives them.
func reparse(t *testing.T, c oracleCase) oracleCase {
	b, err := json.Marshal(c)
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out oracleCase
	require.NoError(t, dec.Decode(&out))
	return out
}

// With KVHASH_VLLM_DIR pointing at an unpacked vLLM wheel (`make
// enginehash-vllm-check` downloads one into build/), the committed vLLM
// vectors are also checked against vLLM's own kv_cache_utils.py and
// hashing.py, run as they are. Skipped otherwise: the wheel is 300+ MB.
func TestVectorsAgainstVLLMSource(t *testing.T) {
	dir := os.Getenv("KVHASH_VLLM_DIR")
	if dir == "" {
		t.Skip("KVHASH_VLLM_DIR not set (make enginehash-vllm-check)")
	}
	cmd := exec.Command(oraclePython(t), filepath.Join("testdata", "vllm_check.py"), "--vllm-dir", dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Logf("%s", bytes.TrimSpace(out))
	require.Contains(t, string(out), " 0 mismatches")
}
