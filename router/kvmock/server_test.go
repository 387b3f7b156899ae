package kvmock

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/enginehash"
	"github.com/kvhash/kvhash/router/ingest"
)

// liveEngine is a whole kvmock: engine, publisher on loopback, HTTP API.
type liveEngine struct {
	srv  *Server
	http *httptest.Server
	sub  zmq4.Socket
	dec  *ingest.Decoder
}

func startLive(t *testing.T, cfg Config) *liveEngine {
	t.Helper()
	cfg.EventsEndpoint, cfg.ReplayEndpoint = loopbackAny, loopbackAny
	cfg.StepInterval = time.Millisecond
	s, err := NewServer(cfg, nil)
	require.NoError(t, err)
	hs := httptest.NewServer(s.Handler)
	t.Cleanup(func() {
		hs.Close()
		assert.NoError(t, s.Close())
	})
	return &liveEngine{srv: s, http: hs, sub: subscribe(t, s.Publisher, cfg.Topic), dec: ingest.NewDecoder()}
}

func (l *liveEngine) complete(t *testing.T, prompt []uint32, maxTokens int) completionOut {
	t.Helper()
	resp, b := post(t, l.http.URL+"/v1/completions", fmt.Sprintf(`{"prompt":%s,"max_tokens":%d}`, jsonIDs(prompt), maxTokens))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	return decodeInto[completionOut](t, b)
}

// nextBatch receives one batch and decodes it with kvrouter's own decoder.
func (l *liveEngine) nextBatch(t *testing.T) *ingest.Batch {
	t.Helper()
	m := recvWithin(t, l.sub, 5*time.Second)
	require.Len(t, m.Frames, 3)
	b, unknown, err := l.dec.DecodeBatch(string(m.Frames[0]), binary.BigEndian.Uint64(m.Frames[1]), m.Frames[2])
	require.NoError(t, err)
	require.Zero(t, unknown)
	return b
}

// storedEvents collects BlockStored events until n blocks have been stored.
func (l *liveEngine) storedEvents(t *testing.T, nBlocks int) []ingest.Event {
	t.Helper()
	var out []ingest.Event
	for got := 0; got < nBlocks; {
		for _, ev := range l.nextBatch(t).Events {
			if ev.Kind == ingest.BlockStored {
				out = append(out, ev)
				got += len(ev.BlockHashes)
			}
		}
	}
	return out
}

func wireIDs(blocks []enginehash.Block) []uint64 {
	out := make([]uint64, len(blocks))
	for i, b := range blocks {
		out[i] = b.WireID
	}
	return out
}

// TestEventsDecodeWithTheRoutersDecoder runs a real request through a whole
// kvmock in every wire variant and reads its events with router/ingest's
// decoder: the ids are vLLM's sha256_cbor chain for the prompt (as
// router/enginehash computes it), the tokens and block size are the
// prompt's, and a repeated prompt stores nothing new.
func TestEventsDecodeWithTheRoutersDecoder(t *testing.T) {
	prompt := seqTokens(300, 13) // 3 full blocks of 4
	want, err := enginehash.VLLMChain(nil, enginehash.VLLMSHA256CBOR, enginehash.DefaultVLLMSeed, prompt, 4, nil)
	require.NoError(t, err)
	require.Len(t, want, 3)

	for _, format := range []EventFormat{EventFormatMap, EventFormatArray} {
		for _, hashes := range []HashFormat{HashFormatInt, HashFormatBytes} {
			t.Run(fmt.Sprintf("%s/%s", format, hashes), func(t *testing.T) {
				cfg := testConfig()
				cfg.EventFormat, cfg.HashFormat, cfg.Topic = format, hashes, "kv"
				cfg.StoreDecodeBlocks = false
				l := startLive(t, cfg)
				l.complete(t, prompt, 2)

				b := l.nextBatch(t)
				assert.Equal(t, "kv", b.Topic)
				assert.Equal(t, uint64(0), b.Seq)
				require.NotNil(t, b.DPRank)
				assert.Equal(t, uint32(0), *b.DPRank)
				require.Len(t, b.Events, 1)
				ev := b.Events[0]
				assert.Equal(t, ingest.BlockStored, ev.Kind)
				assert.Equal(t, wireIDs(want), ev.BlockHashes)
				assert.Nil(t, ev.ParentHash, "the first block is at the root")
				assert.Equal(t, prompt[:12], ev.TokenIDs)
				assert.Equal(t, 4, ev.BlockSize)
				assert.Equal(t, "GPU", ev.Medium)
				assert.Empty(t, ev.LoraName)

				// A longer prompt sharing the prefix stores only its new
				// block, chained to the last shared one.
				longer := append(append([]uint32(nil), prompt...), seqTokens(700, 7)...)
				wantLonger, err := enginehash.VLLMChain(nil, enginehash.VLLMSHA256CBOR, enginehash.DefaultVLLMSeed, longer, 4, nil)
				require.NoError(t, err)
				out := l.complete(t, longer, 1)
				assert.Equal(t, 12, out.Usage.PromptTokensDetails.CachedTokens)
				evs := l.storedEvents(t, 2)
				require.Len(t, evs, 1)
				assert.Equal(t, wireIDs(wantLonger[3:5]), evs[0].BlockHashes)
				require.NotNil(t, evs[0].ParentHash)
				assert.Equal(t, wantLonger[2].WireID, *evs[0].ParentHash)
			})
		}
	}
}

func TestEvictionPublishesBlockRemoved(t *testing.T) {
	cfg := testConfig()
	cfg.NumBlocks = 4
	cfg.StoreDecodeBlocks = false
	l := startLive(t, cfg)
	first := seqTokens(1, 8)
	l.complete(t, first, 1) // blocks A, B cached, then free
	stored := l.storedEvents(t, 2)
	require.Len(t, stored, 1)

	l.complete(t, seqTokens(500, 13), 1) // needs all 4 blocks: evicts B then A
	var removed []uint64
	for len(removed) < 2 {
		for _, ev := range l.nextBatch(t).Events {
			if ev.Kind == ingest.BlockRemoved {
				removed = append(removed, ev.BlockHashes...)
			}
		}
	}
	assert.Equal(t, []uint64{stored[0].BlockHashes[1], stored[0].BlockHashes[0]}, removed,
		"the deepest block of the older prompt goes first")
}

func TestDeterministicIDsMatchVLLMsFormula(t *testing.T) {
	py, err := filepath.Abs("../../build/venv/bin/python")
	require.NoError(t, err)
	oracle, err := filepath.Abs("../enginehash/testdata/oracle.py")
	require.NoError(t, err)
	for _, p := range []string{py, oracle} {
		if _, err := os.Stat(p); err != nil {
			skipOrFail(t, "needs %s: %v", p, err)
		}
	}
	prompt := []uint32{0, 1, 255, 256, 65535, 65536, 1 << 31, 1<<32 - 1, 7, 8, 9, 10}
	for _, algo := range []string{"sha256_cbor", "sha256", "xxhash_cbor"} {
		t.Run(algo, func(t *testing.T) {
			cfg := testConfig()
			cfg.HashAlgo = algo
			cfg.HashSeed = "42"
			ids, err := NewBlockIDs(cfg)
			require.NoError(t, err)
			chain, err := appendChain(nil, ids, SeqTag{}, prompt, 4)
			require.NoError(t, err)

			scheme, err := parseHashAlgo(algo)
			require.NoError(t, err)
			cases, err := json.Marshal([]map[string]any{{"scheme": string(scheme), "seed": "42", "block_size": 4, "tokens": prompt}})
			require.NoError(t, err)
			cmd := exec.Command(py, oracle, "batch")
			cmd.Stdin = strings.NewReader(string(cases))
			out, err := cmd.Output()
			require.NoError(t, err)
			var res []struct {
				Root   string `json:"root"`
				Blocks []struct {
					Digest   string `json:"digest"`
					EventInt uint64 `json:"event_int"`
				} `json:"blocks"`
			}
			require.NoError(t, json.Unmarshal(out, &res))
			require.Len(t, res, 1)
			assert.Equal(t, res[0].Root, ids.Root().String())
			require.Len(t, res[0].Blocks, len(chain))
			for i, d := range chain {
				assert.Equal(t, res[0].Blocks[i].Digest, d.String(), "block %d", i)
				assert.Equal(t, res[0].Blocks[i].EventInt, WireID(d), "block %d", i)
			}
		})
	}
}

func TestUnstableRootsDifferPerStart(t *testing.T) {
	unstable := testConfig()
	unstable.Unstable = true
	a, err := NewServer(unstable, nil)
	require.NoError(t, err)
	b, err := NewServer(unstable, nil)
	require.NoError(t, err)
	assert.NotEqual(t, a.Root, b.Root)
	assert.Len(t, a.Root.Bytes(), 32, "a random 32-byte NONE_HASH, as vLLM draws")

	stable := testConfig()
	c, err := NewServer(stable, nil)
	require.NoError(t, err)
	d, err := NewServer(stable, nil)
	require.NoError(t, err)
	assert.Equal(t, c.Root, d.Root, "the seeded root is the same in every process")
	wantRoot, err := enginehash.VLLMRoot(enginehash.VLLMSHA256CBOR, enginehash.DefaultVLLMSeed)
	require.NoError(t, err)
	assert.Equal(t, wantRoot, c.Root)

	// Every block of the same prompt gets another id under another root.
	prompt := seqTokens(1, 8)
	idsA, err := NewBlockIDs(unstable)
	require.NoError(t, err)
	idsB, err := NewBlockIDs(unstable)
	require.NoError(t, err)
	chainA, err := appendChain(nil, idsA, SeqTag{}, prompt, 4)
	require.NoError(t, err)
	chainB, err := appendChain(nil, idsB, SeqTag{}, prompt, 4)
	require.NoError(t, err)
	for i := range chainA {
		assert.NotEqual(t, WireID(chainA[i]), WireID(chainB[i]), "block %d", i)
	}
}

// TestLoRAAndSaltNameBlocksAsVLLMDoes: a request under a LoRA adapter with
// a cache salt gets vLLM's ids for those extra keys (router/enginehash's
// chain with the same extras, and the CPython oracle's), and its events
// carry lora_name, lora_id and extra_keys as vLLM's do, read with the
// router's decoder.
func TestLoRAAndSaltNameBlocksAsVLLMDoes(t *testing.T) {
	prompt := seqTokens(300, 12)
	extras := &enginehash.VLLMExtras{LoRAName: "adapter-a", CacheSalt: "tenant-7"}
	root, err := enginehash.VLLMRoot(enginehash.VLLMSHA256CBOR, enginehash.DefaultVLLMSeed)
	require.NoError(t, err)
	want, err := enginehash.Chain(nil, enginehash.VLLMSHA256CBOR, root, prompt, 4, extras)
	require.NoError(t, err)

	for _, format := range []EventFormat{EventFormatMap, EventFormatArray} {
		t.Run(string(format), func(t *testing.T) {
			cfg := testConfig()
			cfg.EventFormat = format
			cfg.StoreDecodeBlocks = false
			cfg.LoRAModules = []string{"adapter-b", "adapter-a"}
			l := startLive(t, cfg)
			resp, b := post(t, l.http.URL+"/v1/completions",
				`{"model":"adapter-a","cache_salt":"tenant-7","prompt":`+jsonIDs(prompt)+`,"max_tokens":1}`)
			require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
			assert.Equal(t, "adapter-a", decodeInto[completionOut](t, b).Model)

			evs := l.storedEvents(t, 3)
			require.Len(t, evs, 1)
			ev := evs[0]
			assert.Equal(t, wireIDs(want), ev.BlockHashes)
			assert.Equal(t, "adapter-a", ev.LoraName)
			require.NotNil(t, ev.LoraID)
			assert.Equal(t, int64(2), *ev.LoraID, "lora_int_id: the adapter's place in --lora-modules, from 1")
			require.Len(t, ev.ExtraKeys, 3)
			assert.Equal(t, []any{"adapter-a", "tenant-7"}, ev.ExtraKeys[0], "the salt on the first block only")
			assert.Equal(t, []any{"adapter-a"}, ev.ExtraKeys[1])
		})
	}

	py, err := filepath.Abs("../../build/venv/bin/python")
	require.NoError(t, err)
	oracle, err := filepath.Abs("../enginehash/testdata/oracle.py")
	require.NoError(t, err)
	if _, err := os.Stat(py); err != nil {
		skipOrFail(t, "needs %s: %v", py, err)
	}
	cases, err := json.Marshal([]map[string]any{{
		"scheme": "vllm-sha256-cbor", "seed": enginehash.DefaultVLLMSeed, "block_size": 4, "tokens": prompt,
		"extras": map[string]any{"lora": "adapter-a", "salt": "tenant-7"},
	}})
	require.NoError(t, err)
	cmd := exec.Command(py, oracle, "batch")
	cmd.Stdin = strings.NewReader(string(cases))
	out, err := cmd.Output()
	require.NoError(t, err)
	var res []struct {
		Blocks []struct {
			EventInt uint64 `json:"event_int"`
		} `json:"blocks"`
	}
	require.NoError(t, json.Unmarshal(out, &res))
	require.Len(t, res, 1)
	require.Len(t, res[0].Blocks, 3)
	for i, blk := range res[0].Blocks {
		assert.Equal(t, blk.EventInt, want[i].WireID, "block %d: vLLM's formula", i)
	}
}
