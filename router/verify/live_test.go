package verify

import (
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/internal/enginetest"
	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/ingest"
	"github.com/kvhash/kvhash/router/internal/logtest"
	"github.com/kvhash/kvhash/router/kvmock"
)

// startKVMock runs a kvmock engine in-process, publishing on loopback, and
// keeps sending it fresh two-block prompts (each a root store) until the
// test ends.
func startKVMock(t *testing.T, algo, seed string, unstable bool) string {
	return enginetest.StartKVMock(t, enginetest.KVMock{HashAlgo: algo, HashSeed: seed, Unstable: unstable, BlockSize: 4, PromptBlocks: 2})
}

func TestLiveDoctorAgainstKVMock(t *testing.T) {
	cases := []struct {
		name, algo, seed string
		unstable         bool
		want             indexer.Verdict
		scheme           string
	}{
		{"sha256_cbor default seed", "sha256_cbor", "vllm-none-hash", false, indexer.VerdictVerified, "vllm-sha256-cbor"},
		{"sha256_cbor PYTHONHASHSEED=0", "sha256_cbor", "0", false, indexer.VerdictVerified, "vllm-sha256-cbor"},
		{"sha256 default seed", "sha256", "vllm-none-hash", false, indexer.VerdictVerified, "vllm-sha256"},
		{"sha256 PYTHONHASHSEED=0", "sha256", "0", false, indexer.VerdictVerified, "vllm-sha256"},
		// A random root per process, one process: nothing shows it random
		// (a scheme kvrouter does not know would look the same).
		{"random root, one process", "sha256", "vllm-none-hash", true, indexer.VerdictUnverifiable, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ep := startKVMock(t, tc.algo, tc.seed, tc.unstable)
			wait := 20 * time.Second // ends as soon as verified
			if tc.want == indexer.VerdictUnverifiable {
				wait = 2 * time.Second // never decided: the whole wait
			}
			rep, err := Run(t.Context(), Options{Endpoint: ep, Duration: wait, BlockSize: 4})
			require.NoError(t, err)
			require.Equal(t, tc.want, rep.Verdict(), "%+v", rep)
			require.NotEmpty(t, rep.Ranks)
			eh := rep.Ranks[0].EngineHash
			assert.Equal(t, tc.scheme, string(eh.Scheme))
			if tc.want == indexer.VerdictVerified {
				assert.Equal(t, tc.seed, eh.Seed)
				assert.Empty(t, Fix(rep.Verdict()))
				return
			}
			assert.Equal(t, eh.Checked, eh.Mismatches, "every root store checked mismatched")
			assert.Contains(t, Fix(rep.Verdict()), "PYTHONHASHSEED")
			assert.Contains(t, Fix(rep.Verdict()), "--prefix-caching-hash-algo sha256_cbor")
		})
	}
}

func TestLiveDoctorReportsNothingSeen(t *testing.T) {
	cfg := kvmock.DefaultConfig()
	cfg.EventsEndpoint = "tcp://127.0.0.1:*"
	s, err := kvmock.NewServer(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer func() { assert.NoError(t, s.Close()) }()
	rep, err := Run(t.Context(), Options{Endpoint: "tcp://" + s.Publisher.EventsAddr().String(), Duration: 200 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, indexer.VerdictPending, rep.Verdict())
	assert.Empty(t, rep.Ranks)
	assert.Contains(t, Fix(rep.Verdict()), "send the engine a new prompt")

	_, err = Run(t.Context(), Options{})
	require.ErrorContains(t, err, "no endpoint")
	_, err = Run(t.Context(), Options{Endpoint: "tcp://127.0.0.1:1", EngineHash: "md5"})
	require.ErrorContains(t, err, "unknown scheme")
}

// kvrouter's indexer behind a real subscriber, against kvmock --unstable
// (a random root, one process): its ids match no scheme kvrouter knows,
// but nothing shows them random (a restart naming the same tokens
// otherwise would): unverifiable, with the fix should they be random,
// and never quarantined, in warn or enforce mode.
func TestRouterDoesNotQuarantineAnUnknownRootWithoutEvidence(t *testing.T) {
	for _, mode := range []core.Mode{core.ModeWarn, core.ModeEnforce} {
		t.Run(mode.String(), func(t *testing.T) {
			ep := startKVMock(t, "sha256_cbor", "vllm-none-hash", true)
			logs := &logtest.Buffer{}
			ix, err := indexer.New(indexer.Options{BlockSize: 4, Mode: mode, Logger: slog.New(slog.NewJSONHandler(logs, nil))})
			require.NoError(t, err)
			_, err = ix.AddWorker(indexer.WorkerSpec{WorkerID: 7, Model: "kvmock", Endpoint: ep})
			require.NoError(t, err)
			first := &firstStore{ix: ix}
			sub, err := ingest.New(ingest.Options{Handler: first})
			require.NoError(t, err)
			defer sub.Close()
			_, err = sub.Subscribe(ingest.Subscription{Model: "kvmock", WorkerID: 7, Endpoint: ep})
			require.NoError(t, err)
			var ri indexer.RankInfo
			require.Eventually(t, func() bool {
				wi, _ := ix.Worker(7)
				ri = wi.Ranks[0]
				return ri.EngineHash.Verdict != indexer.VerdictPending
			}, 20*time.Second, 10*time.Millisecond)
			assert.Equal(t, indexer.VerdictUnverifiable, ri.EngineHash.Verdict)
			assert.Equal(t, indexer.VerdictUnverifiable, first.verdict(), "right after the first batch with a root store")
			out := logs.String()
			assert.Contains(t, out, "engine block ids cannot be verified yet")
			assert.Contains(t, out, "set PYTHONHASHSEED")
			assert.NotContains(t, out, "engine block ids unstable")
			assert.NotEqual(t, indexer.StateQuarantined, ri.State)
			assert.NotContains(t, out, "worker quarantined")
		})
	}
}

// firstStore passes batches to the indexer and records the rank's verdict
// right after the first batch that holds a root store.
type firstStore struct {
	ix   *indexer.Indexer
	mu   sync.Mutex
	seen bool
	v    indexer.Verdict
}

func (f *firstStore) HandleBatch(src ingest.Source, b *ingest.Batch) {
	f.ix.HandleBatch(src, b)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seen {
		return
	}
	for _, ev := range b.Events {
		if ev.Kind == ingest.BlockStored && ev.ParentHash == nil && len(ev.BlockHashes) > 0 {
			f.seen = true
			wi, _ := f.ix.Worker(src.WorkerID)
			f.v = wi.Ranks[0].EngineHash.Verdict
			return
		}
	}
}

func (f *firstStore) HandleStream(src ingest.Source, ev ingest.StreamEvent) {
	f.ix.HandleStream(src, ev)
}

func (f *firstStore) verdict() indexer.Verdict {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.v
}
