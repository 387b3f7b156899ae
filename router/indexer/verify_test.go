package indexer

import (
	"bytes"
	"crypto/rand"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/enginehash"
	"github.com/kvhash/kvhash/router/ingest"
	"github.com/kvhash/kvhash/router/internal/logtest"
)

// engineChain names blocks as one engine does: a scheme from a root digest.
// enginehash is checked against CPython's pickle, cbor2 and hashlib in its
// own tests; here it plays the engine.
type engineChain struct {
	scheme enginehash.Scheme
	root   enginehash.Digest
}

func vllmEngine(t *testing.T, s enginehash.Scheme, seed string) engineChain {
	t.Helper()
	root, err := enginehash.VLLMRoot(s, seed)
	require.NoError(t, err)
	return engineChain{scheme: s, root: root}
}

// randomRootEngine is vLLM without PYTHONHASHSEED before its fix: 32
// random bytes.
func randomRootEngine(t *testing.T, s enginehash.Scheme) engineChain {
	t.Helper()
	var b [32]byte
	_, err := rand.Read(b[:])
	require.NoError(t, err)
	if s == enginehash.VLLMXXHash || s == enginehash.VLLMXXHashCBOR {
		return engineChain{scheme: s, root: mustDigest(t, b[:16])}
	}
	return engineChain{scheme: s, root: mustDigest(t, b[:])}
}

func mustDigest(t *testing.T, b []byte) enginehash.Digest {
	t.Helper()
	d, err := enginehash.DigestFromBytes(b)
	require.NoError(t, err)
	return d
}

// ids returns the engine ids of toks' full blocks under parent (the
// root for a root store) and the last block's digest.
func (e engineChain) ids(t *testing.T, parent *enginehash.Digest, toks []uint32) ([]uint64, enginehash.Digest) {
	t.Helper()
	d := e.root
	if parent != nil {
		d = *parent
	}
	var out []uint64
	for i := 0; i+testBS <= len(toks); i += testBS {
		var err error
		d, err = e.scheme.BlockDigest(d, toks[i:i+testBS], nil)
		require.NoError(t, err)
		out = append(out, e.scheme.WireID(d))
	}
	return out, d
}

// rootStore is a root BlockStored of toks under e.
func (e engineChain) rootStore(t *testing.T, toks []uint32) ingest.Event {
	ids, _ := e.ids(t, nil, toks)
	return stored(nil, toks, ids...)
}

func newVerifyFixture(t *testing.T, mutate func(*Options)) (*fixture, *logtest.Buffer) {
	t.Helper()
	logs := &logtest.Buffer{}
	f := newFixture(t, func(o *Options) {
		o.Logger = slog.New(slog.NewJSONHandler(logs, nil))
		if mutate != nil {
			mutate(o)
		}
	})
	return f, logs
}

func (f *fixture) addWorkerHash(id uint64, model, engineHash string) {
	f.t.Helper()
	_, err := f.ix.AddWorker(WorkerSpec{WorkerID: id, Model: model, DPSize: 1, EngineHash: engineHash})
	require.NoError(f.t, err)
}

func TestDeterministicEnginesAreVerifiedWithTheirSchemeAndSeed(t *testing.T) {
	sglang := engineChain{scheme: enginehash.SGLangSHA256}
	trtllm := engineChain{scheme: enginehash.TRTLLMV2SHA256, root: enginehash.TRTLLMRoot(enginehash.TRTLLMScope{})}
	cases := []struct {
		name, setting string
		engine        engineChain
		wantSeed      string
	}{
		{"sha256 default seed, auto", "auto", vllmEngine(t, enginehash.VLLMSHA256, enginehash.DefaultVLLMSeed), enginehash.DefaultVLLMSeed},
		{"sha256 PYTHONHASHSEED=0, auto", "", vllmEngine(t, enginehash.VLLMSHA256, "0"), "0"},
		{"sha256_cbor default seed, auto", "auto", vllmEngine(t, enginehash.VLLMSHA256CBOR, enginehash.DefaultVLLMSeed), enginehash.DefaultVLLMSeed},
		{"sha256_cbor PYTHONHASHSEED=0, auto", "auto", vllmEngine(t, enginehash.VLLMSHA256CBOR, "0"), "0"},
		{"sha256_cbor named without seed", "sha256_cbor", vllmEngine(t, enginehash.VLLMSHA256CBOR, "0"), "0"},
		{"sha256 named with seed", "sha256:0", vllmEngine(t, enginehash.VLLMSHA256, "0"), "0"},
		{"xxhash PYTHONHASHSEED=0, auto", "auto", vllmEngine(t, enginehash.VLLMXXHash, "0"), "0"},
		{"operator seed 42, auto", "auto", vllmEngine(t, enginehash.VLLMSHA256CBOR, "42"), "42"},
		{"xxhash_cbor named with seed", "xxhash_cbor:42", vllmEngine(t, enginehash.VLLMXXHashCBOR, "42"), "42"},
		{"sglang", "auto", sglang, ""},
		{"trtllm v2", "trtllm-v2-sha256", trtllm, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, logs := newVerifyFixture(t, func(o *Options) { o.EngineHashSeeds = []string{"42"} })
			f.addWorkerHash(1, "m", tc.setting)
			assert.Equal(t, VerdictPending, f.rankInfo(1, 0).EngineHash.Verdict, "no root store yet")
			f.send(src(1, "m", 0), tc.engine.rootStore(t, tokens(10, 8)))
			eh := f.rankInfo(1, 0).EngineHash
			assert.Equal(t, VerdictVerified, eh.Verdict, eh.Reason)
			assert.Equal(t, tc.engine.scheme, eh.Scheme)
			assert.Equal(t, tc.wantSeed, eh.Seed)
			assert.Equal(t, uint64(1), eh.Checked)
			assert.Contains(t, logs.String(), "engine block ids verified")
		})
	}
}

// A root no known scheme reproduces is unverifiable, not unstable: it
// may be a scheme kvrouter does not know. The evidence of random ids is
// the same tokens named otherwise after the engine restarted: then the
// rank is unstable, with the fix, and quarantined in enforce mode.
func TestUnknownRootIsUnverifiableUntilARestartNamesItOtherwise(t *testing.T) {
	for _, mode := range []core.Mode{core.ModeWarn, core.ModeEnforce} {
		t.Run(mode.String(), func(t *testing.T) {
			f, logs := newVerifyFixture(t, func(o *Options) { o.Mode = mode; o.QuarantineSettle = time.Second })
			f.addWorkerHash(1, "m", "auto")
			s := src(1, "m", 0)
			eng := randomRootEngine(t, enginehash.VLLMXXHash)
			f.send(s, eng.rootStore(t, tokens(10, 8)))
			ri := f.rankInfo(1, 0)
			assert.Equal(t, VerdictUnverifiable, ri.EngineHash.Verdict)
			assert.Contains(t, ri.EngineHash.Reason, "matches no scheme and seed the router knows")
			assert.Contains(t, ri.EngineHash.Reason, "PYTHONHASHSEED", "the fix, should the ids be random")
			assert.Equal(t, StateLive, ri.State, "no evidence, no quarantine")
			assert.NotContains(t, logs.String(), "engine block ids unstable")

			// The engine restarts with another random root: the same tokens
			// now have another id.
			f.ix.HandleStream(s, ingest.StreamEvent{Kind: ingest.StreamRestarted})
			f.seq[core.Worker{ID: 1}] = 0
			again := randomRootEngine(t, enginehash.VLLMXXHash)
			f.send(s, again.rootStore(t, tokens(10, 8)))
			ri = f.rankInfo(1, 0)
			assert.Equal(t, VerdictUnstable, ri.EngineHash.Verdict)
			assert.Contains(t, ri.EngineHash.Reason, "random per process")
			assert.Contains(t, ri.EngineHash.Reason, "named")
			out := logs.String()
			assert.Contains(t, out, `"msg":"kvrouter: engine block ids unstable`)
			assert.Contains(t, out, "--prefix-caching-hash-algo sha256_cbor")
			assert.Contains(t, out, "upgrade")
			if mode == core.ModeWarn {
				assert.Equal(t, StateLive, ri.State, "warn mode only reports")
				return
			}
			assert.Equal(t, StateQuarantined, ri.State)
			assert.Equal(t, uint64(1), ri.Quarantines)
			assert.Contains(t, ri.Reason, "unstable engine block ids")
			// Its events keep applying, but it stays quarantined while its
			// ids are unstable, however long it runs.
			f.clock.Advance(time.Hour)
			f.send(s, again.rootStore(t, tokens(100, 4)))
			ri = f.rankInfo(1, 0)
			assert.Equal(t, StateQuarantined, ri.State)
			assert.Equal(t, uint64(1), ri.Quarantines, "one quarantine, not one per store")
		})
	}
}

// The other evidence of random ids: two engines that should agree (one
// model, one engine_hash) name the same tokens otherwise. Engines of
// another model or engine_hash setting, or ones that name alike (a
// deterministic scheme kvrouter does not know), are no evidence.
func TestUnknownRootIsUnstableWhenAnEngineThatShouldAgreeNamesItOtherwise(t *testing.T) {
	// Warn mode: in enforce mode the index's own hash_mismatch (the same
	// content under another name in one index) quarantines as well, which
	// is not what is tested here.
	f, logs := newVerifyFixture(t, nil)
	models := map[uint64]string{1: "m", 2: "m", 3: "other", 4: "m", 5: "m2", 6: "m2"}
	f.addWorkerHash(1, "m", "auto")
	f.addWorkerHash(2, "m", "auto")
	f.addWorkerHash(3, "other", "auto")      // another model
	f.addWorkerHash(4, "m", "xxhash_cbor:7") // another engine_hash
	f.addWorkerHash(5, "m2", "auto")         // with 6: one deterministic scheme kvrouter does not know
	f.addWorkerHash(6, "m2", "auto")
	prompt := tokens(10, 8)
	unknown := randomRootEngine(t, enginehash.VLLMXXHash) // one root for both
	f.send(src(5, "m2", 0), unknown.rootStore(t, prompt))
	f.send(src(6, "m2", 0), unknown.rootStore(t, prompt))
	for _, id := range []uint64{1, 3, 4} {
		f.send(src(id, models[id], 0), randomRootEngine(t, enginehash.VLLMXXHash).rootStore(t, prompt))
	}
	for _, id := range []uint64{1, 3, 4, 5, 6} {
		assert.Equal(t, VerdictUnverifiable, f.rankInfo(id, 0).EngineHash.Verdict, "worker %d: no engine that should agree disagrees", id)
	}
	assert.NotContains(t, logs.String(), "engine block ids unstable")

	// Worker 2, of worker 1's model and engine_hash, names the same tokens
	// otherwise.
	f.send(src(2, "m", 0), randomRootEngine(t, enginehash.VLLMXXHash).rootStore(t, prompt))
	eh := f.rankInfo(2, 0).EngineHash
	assert.Equal(t, VerdictUnstable, eh.Verdict)
	assert.Contains(t, eh.Reason, "worker 1 rank 0, of the same model and engine_hash (auto)")
	assert.Contains(t, eh.Reason, "random per process")
	assert.Contains(t, logs.String(), `"msg":"kvrouter: engine block ids unstable`)
	// Worker 1's next root of that content, named otherwise than worker
	// 2's, is the evidence for it as well.
	f.send(src(1, "m", 0), randomRootEngine(t, enginehash.VLLMXXHash).rootStore(t, prompt))
	assert.Equal(t, VerdictUnstable, f.rankInfo(1, 0).EngineHash.Verdict)
	assert.Equal(t, VerdictUnverifiable, f.rankInfo(5, 0).EngineHash.Verdict, "engines that agree stay unverifiable")
}

func TestVerifiedWorkerRestartedWithRandomRootBecomesUnstable(t *testing.T) {
	f, logs := newVerifyFixture(t, func(o *Options) { o.Mode = core.ModeEnforce })
	f.addWorkerHash(1, "m", "auto")
	good := vllmEngine(t, enginehash.VLLMSHA256, enginehash.DefaultVLLMSeed)
	s := src(1, "m", 0)
	for i := range 20 { // past the first few: sampling from here
		f.send(s, good.rootStore(t, tokens(uint32(100*i), 4)))
	}
	ri := f.rankInfo(1, 0)
	require.Equal(t, VerdictVerified, ri.EngineHash.Verdict)
	assert.Equal(t, uint64(DefaultVerifyFirst), ri.EngineHash.Checked, "then one in DefaultVerifyEvery")

	// The engine restarts (seq back to 0) without PYTHONHASHSEED on an
	// old vLLM: its first root store after the restart is checked.
	f.ix.HandleStream(s, ingest.StreamEvent{Kind: ingest.StreamRestarted})
	f.seq[core.Worker{ID: 1}] = 0
	bad := randomRootEngine(t, enginehash.VLLMSHA256)
	f.send(s, bad.rootStore(t, tokens(5000, 4)))
	ri = f.rankInfo(1, 0)
	assert.Equal(t, VerdictUnstable, ri.EngineHash.Verdict)
	assert.Contains(t, ri.EngineHash.Reason, "no longer matches vllm-sha256")
	assert.Equal(t, StateQuarantined, ri.State)
	assert.Contains(t, logs.String(), "restarted with a random root")

	// Fixed and restarted again: verified, and live once settled.
	f.ix.HandleStream(s, ingest.StreamEvent{Kind: ingest.StreamRestarted})
	f.seq[core.Worker{ID: 1}] = 0
	f.send(s, good.rootStore(t, tokens(7000, 4)))
	assert.Equal(t, VerdictVerified, f.rankInfo(1, 0).EngineHash.Verdict)
	f.clock.Advance(DefaultQuarantineSettle + time.Second)
	f.send(s, good.rootStore(t, tokens(8000, 4)))
	assert.Equal(t, StateLive, f.rankInfo(1, 0).State)
}

func TestWorkersOfOneModelUnderDifferentSeedsDisagree(t *testing.T) {
	f, logs := newVerifyFixture(t, nil)
	f.addWorkerHash(1, "m", "auto")
	f.addWorkerHash(2, "m", "auto")
	f.addWorkerHash(3, "other", "auto")
	a := vllmEngine(t, enginehash.VLLMSHA256CBOR, enginehash.DefaultVLLMSeed)
	b := vllmEngine(t, enginehash.VLLMSHA256CBOR, "0")
	f.send(src(1, "m", 0), a.rootStore(t, tokens(10, 4)))
	f.send(src(3, "other", 0), b.rootStore(t, tokens(10, 4)))
	assert.True(t, f.ix.HashAgreements()[0].Agrees())
	assert.False(t, f.rankInfo(1, 0).EngineHash.Disagrees)

	f.send(src(2, "m", 0), b.rootStore(t, tokens(10, 4)))
	f.send(src(2, "m", 0), b.rootStore(t, tokens(20, 4)))
	ag := f.ix.HashAgreements()
	require.Len(t, ag, 2)
	assert.Equal(t, ModelKey{Model: "m"}, ag[0].Key)
	assert.False(t, ag[0].Agrees())
	require.Len(t, ag[0].Groups, 2)
	assert.Equal(t, "0", ag[0].Groups[0].Candidate.Seed)
	assert.Equal(t, []core.Worker{{ID: 2}}, ag[0].Groups[0].Ranks)
	assert.True(t, ag[1].Agrees(), "another model's seed is not a disagreement")
	assert.True(t, f.rankInfo(1, 0).EngineHash.Disagrees)
	assert.True(t, f.rankInfo(2, 0).EngineHash.Disagrees)
	assert.False(t, f.rankInfo(3, 0).EngineHash.Disagrees)
	assert.Equal(t, 1, bytes.Count([]byte(logs.String()), []byte("different engine hash schemes or seeds")), "logged once")
}

func TestUndecidableRootStoresAreUnverifiable(t *testing.T) {
	t.Run("xxhash named without its seed", func(t *testing.T) {
		f, _ := newVerifyFixture(t, func(o *Options) { o.Mode = core.ModeEnforce })
		f.addWorkerHash(1, "m", "xxhash")
		f.send(src(1, "m", 0), vllmEngine(t, enginehash.VLLMXXHash, "1234").rootStore(t, tokens(10, 4)))
		ri := f.rankInfo(1, 0)
		assert.Equal(t, VerdictUnverifiable, ri.EngineHash.Verdict)
		assert.Contains(t, ri.EngineHash.Reason, "xxhash:SEED")
		assert.Equal(t, StateLive, ri.State, "not quarantined: the router lacks the seed")
	})
	t.Run("LoRA store without the adapter path", func(t *testing.T) {
		f, _ := newVerifyFixture(t, nil)
		f.addWorkerHash(1, "m", "auto")
		e := stored(nil, tokens(10, 4), 0xdead)
		e.LoraName = "adapter"
		e.ExtraKeys = [][]any{{"adapter"}}
		f.send(src(1, "m", 0), e)
		eh := f.rankInfo(1, 0).EngineHash
		assert.Equal(t, VerdictUnverifiable, eh.Verdict)
		assert.Contains(t, eh.Reason, "LoRA")
		// A plain root store decides.
		f.send(src(1, "m", 0), vllmEngine(t, enginehash.VLLMSHA256, "0").rootStore(t, tokens(50, 4)))
		assert.Equal(t, VerdictVerified, f.rankInfo(1, 0).EngineHash.Verdict)
	})
	t.Run("verification off", func(t *testing.T) {
		f, _ := newVerifyFixture(t, func(o *Options) { o.Mode = core.ModeEnforce })
		f.addWorkerHash(1, "m", "off")
		f.send(src(1, "m", 0), stored(nil, tokens(10, 4), 1))
		ri := f.rankInfo(1, 0)
		assert.Equal(t, VerdictUnverifiable, ri.EngineHash.Verdict)
		assert.Equal(t, StateLive, ri.State)
	})
}

func TestChainedVerificationIsOptIn(t *testing.T) {
	eng := vllmEngine(t, enginehash.VLLMSHA256CBOR, "0")
	toks := tokens(10, 12)
	rootIDs, last := eng.ids(t, nil, toks[:8])
	tail, _ := eng.ids(t, &last, toks[8:])
	for _, chained := range []bool{false, true} {
		f, logs := newVerifyFixture(t, func(o *Options) { o.VerifyChained = chained })
		f.addWorkerHash(1, "m", "auto")
		f.send(src(1, "m", 0), stored(nil, toks[:8], rootIDs...))
		f.send(src(1, "m", 0), stored(u64p(rootIDs[1]), toks[8:], tail...))
		f.send(src(1, "m", 0), stored(u64p(rootIDs[1]), tokens(900, 4), 12345)) // a wrong id
		eh := f.rankInfo(1, 0).EngineHash
		assert.Equal(t, VerdictVerified, eh.Verdict)
		if !chained {
			assert.Zero(t, eh.ChainChecked)
			continue
		}
		assert.Equal(t, uint64(3), eh.ChainChecked, "the root's second block, the tail, the wrong id")
		assert.Equal(t, uint64(1), eh.ChainMismatches)
		assert.Contains(t, logs.String(), "chained engine block id does not match")
	}
}

func TestEngineHashSettingChecks(t *testing.T) {
	cases := []struct {
		in      string
		want    string
		wantErr string
	}{
		{"", "auto", ""},
		{"AUTO", "auto", ""},
		{"off", "off", ""},
		{"sha256_cbor", "vllm-sha256-cbor", ""},
		{"vllm-sha256:0", "vllm-sha256:0", ""},
		{"sha256:", "vllm-sha256:", ""},
		{"sglang-sha256", "sglang-sha256", ""},
		{"sglang-sha256:0", "", "has no seed"},
		{"md5", "", "unknown scheme"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			s, err := ParseEngineHash(tc.in)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, s.String())
		})
	}
	f := newFixture(t, nil)
	_, err := f.ix.AddWorker(WorkerSpec{WorkerID: 1, Model: "m", EngineHash: "md5"})
	require.ErrorIs(t, err, ErrInvalidWorker)
}

func TestChangingEngineHashResetsTheVerdict(t *testing.T) {
	f, _ := newVerifyFixture(t, nil)
	f.addWorkerHash(1, "m", "auto")
	f.send(src(1, "m", 0), vllmEngine(t, enginehash.VLLMSHA256, "0").rootStore(t, tokens(10, 4)))
	require.Equal(t, VerdictVerified, f.rankInfo(1, 0).EngineHash.Verdict)
	f.addWorkerHash(1, "m", "sha256_cbor:0")
	assert.Equal(t, VerdictPending, f.rankInfo(1, 0).EngineHash.Verdict)
	assert.Empty(t, f.ix.HashAgreements())
}

func FuzzParseEngineHash(f *testing.F) {
	for _, s := range []string{"", "auto", "off", "sha256", "sha256_cbor:0", "xxhash:vllm-none-hash", "sglang-sha256:x", ":", "trtllm_v2_sha256"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseEngineHash(in)
		if err != nil {
			return
		}
		again, err := ParseEngineHash(s.String())
		require.NoError(t, err, "its own String parses")
		assert.Equal(t, s, again)
	})
}

// FuzzVerifyStore: any store, root or chained, with any extra keys, gives
// a verdict without panicking and never a verified one for made-up ids
// (the chance of a collision is 2^-64 per candidate).
func FuzzVerifyStore(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8}, uint64(1), false, "", "salt", true)
	f.Add([]byte{}, uint64(0), true, "lora", "", false)
	f.Fuzz(func(t *testing.T, raw []byte, id uint64, chained bool, lora, extra string, enforce bool) {
		mode := core.ModeWarn
		if enforce {
			mode = core.ModeEnforce
		}
		fx, _ := newVerifyFixture(t, func(o *Options) { o.VerifyChained = chained; o.Mode = mode })
		fx.addWorkerHash(1, "m", "auto")
		toks := make([]uint32, len(raw))
		for i, b := range raw {
			toks[i] = uint32(b)
		}
		n := len(toks) / testBS
		hashes := make([]uint64, n)
		for i := range hashes {
			hashes[i] = id + uint64(i)
		}
		e := stored(nil, toks[:n*testBS], hashes...)
		e.LoraName = lora
		if extra != "" && n > 0 {
			e.ExtraKeys = [][]any{{extra, []any{extra, int64(len(extra))}}}
		}
		fx.send(src(1, "m", 0), e)
		fx.send(src(1, "m", 0), stored(u64p(id), toks[:n*testBS], hashes...))
		eh := fx.rankInfo(1, 0).EngineHash
		assert.NotEqual(t, VerdictVerified, eh.Verdict)
	})
}
