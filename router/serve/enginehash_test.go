package serve

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/enginehash"
	"github.com/kvhash/kvhash/router/ingest"
)

// vllmRootStore is a root BlockStored of one block as vLLM names it under
// scheme s and seed.
func vllmRootStore(t *testing.T, s enginehash.Scheme, seed string, toks []uint32) ingest.Event {
	t.Helper()
	root, err := enginehash.VLLMRoot(s, seed)
	require.NoError(t, err)
	d, err := s.BlockDigest(root, toks, nil)
	require.NoError(t, err)
	return ingest.Event{Kind: ingest.BlockStored, BlockHashes: []uint64{s.WireID(d)}, TokenIDs: toks, BlockSize: len(toks), Medium: "GPU"}
}

type verdictJSON struct {
	Verdict   string `json:"verdict"`
	Scheme    string `json:"scheme"`
	Seed      string `json:"seed"`
	Reason    string `json:"reason"`
	Disagrees bool   `json:"disagrees"`
}

type workersJSON struct {
	Workers []struct {
		WorkerID   uint64 `json:"worker_id"`
		EngineHash string `json:"engine_hash"`
		Ranks      []struct {
			EngineHash verdictJSON `json:"engine_hash"`
		} `json:"ranks"`
	} `json:"workers"`
	Agreement []struct {
		Model  string `json:"model"`
		Agree  bool   `json:"agree"`
		Groups []struct {
			Scheme  string `json:"scheme"`
			Seed    string `json:"seed"`
			Workers []struct {
				WorkerID uint64 `json:"worker_id"`
			} `json:"workers"`
		} `json:"groups"`
	} `json:"engine_hash_agreement"`
}

// The verdicts are on GET /v1/workers and /metrics: a worker verified
// under the default seed, one under PYTHONHASHSEED=0 (a disagreement),
// one with random ids, one not seen yet.
func TestEngineHashVerdictsOnWorkersAndMetrics(t *testing.T) {
	s := newTestServer(t, testConfig())
	for _, w := range []string{
		`{"worker_id":1,"model":"m"}`, `{"worker_id":2,"model":"m","engine_hash":"sha256:0"}`,
		`{"worker_id":3,"model":"m","engine_hash":"auto"}`, `{"worker_id":4,"model":"m"}`,
	} {
		s.must(201, "POST", "/v1/workers", w, nil)
	}
	s.must(400, "POST", "/v1/workers", `{"worker_id":5,"model":"m","engine_hash":"md5"}`, nil)
	ix := s.srv.Indexer()
	toks := seqTokens(10, testBlockSize)
	ix.HandleBatch(ingest.Source{WorkerID: 1, Model: "m"}, &ingest.Batch{Events: []ingest.Event{vllmRootStore(t, enginehash.VLLMSHA256CBOR, enginehash.DefaultVLLMSeed, toks)}})
	ix.HandleBatch(ingest.Source{WorkerID: 2, Model: "m"}, &ingest.Batch{Events: []ingest.Event{vllmRootStore(t, enginehash.VLLMSHA256, "0", toks)}})
	// Worker 3's ids are random per process: the same tokens under
	// another id after a restart.
	random := vllmRootStore(t, enginehash.VLLMSHA256, "0", toks)
	random.BlockHashes[0] ^= 0x5a5a
	ix.HandleBatch(ingest.Source{WorkerID: 3, Model: "m"}, &ingest.Batch{Events: []ingest.Event{random}})
	ix.HandleStream(ingest.Source{WorkerID: 3, Model: "m"}, ingest.StreamEvent{Kind: ingest.StreamRestarted})
	random = vllmRootStore(t, enginehash.VLLMSHA256, "0", toks)
	random.BlockHashes[0] ^= 0xa5a5
	ix.HandleBatch(ingest.Source{WorkerID: 3, Model: "m"}, &ingest.Batch{Events: []ingest.Event{random}})

	var got workersJSON
	s.must(200, "GET", "/v1/workers", "", &got)
	require.Len(t, got.Workers, 4)
	verdicts := map[uint64]verdictJSON{}
	for _, w := range got.Workers {
		require.Len(t, w.Ranks, 1)
		verdicts[w.WorkerID] = w.Ranks[0].EngineHash
	}
	assert.Equal(t, "auto", got.Workers[0].EngineHash)
	assert.Equal(t, "sha256:0", got.Workers[1].EngineHash)
	assert.Equal(t, verdictJSON{Verdict: "verified", Scheme: "vllm-sha256-cbor", Seed: "vllm-none-hash", Disagrees: true}, verdicts[1])
	assert.Equal(t, verdictJSON{Verdict: "verified", Scheme: "vllm-sha256", Seed: "0", Disagrees: true}, verdicts[2])
	assert.Equal(t, "unstable", verdicts[3].Verdict)
	assert.Contains(t, verdicts[3].Reason, "random per process")
	assert.Equal(t, "pending", verdicts[4].Verdict)
	require.Len(t, got.Agreement, 1)
	assert.False(t, got.Agreement[0].Agree)
	require.Len(t, got.Agreement[0].Groups, 2)
	assert.Equal(t, "vllm-sha256", got.Agreement[0].Groups[0].Scheme)
	assert.Equal(t, uint64(2), got.Agreement[0].Groups[0].Workers[0].WorkerID)

	code, body := s.do("GET", "/metrics", "")
	require.Equal(t, 200, code)
	text := string(body)
	for _, line := range []string{
		`kvrouter_engine_hash_verdict{dp_rank="0",model="m",scheme="vllm-sha256-cbor",seed="vllm-none-hash",tenant="",verdict="verified",worker_id="1"} 1`,
		`kvrouter_engine_hash_verdict{dp_rank="0",model="m",scheme="",seed="",tenant="",verdict="unstable",worker_id="3"} 1`,
		`kvrouter_engine_hash_verdict{dp_rank="0",model="m",scheme="",seed="",tenant="",verdict="pending",worker_id="4"} 1`,
		`kvrouter_engine_hash_mismatches_total{dp_rank="0",model="m",tenant="",worker_id="3"} 2`,
		`kvrouter_engine_hash_disagreement{model="m",tenant=""} 1`,
	} {
		assert.True(t, strings.Contains(text, line+"\n"), "missing %s", line)
	}
}
