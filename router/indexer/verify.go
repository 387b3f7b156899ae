package indexer

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"strconv"

	"github.com/kvhash/kvhash/router/enginehash"
	"github.com/kvhash/kvhash/router/ingest"
)

// Engine-hash verification. A root store's block id (parent_block_hash
// null) depends only on the engine's scheme, its seed, the block's tokens
// and its extra keys, all of which the event carries: the router recomputes
// it (router/enginehash) and learns whether the engine's ids are
// deterministic, under which scheme and seed. An id that no deterministic
// candidate reproduces is what a random root per process gives (vLLM
// without PYTHONHASHSEED before its fix, and its xxhash schemes always):
// every restart renames every block, so the rank's overlap is worthless
// and KV transfer between engines fails.
//
// Cost: the first Options.VerifyFirst root stores of a rank (again after
// each engine restart) are checked, then one in Options.VerifyEvery; a
// rank that is not verified checks every root store. A store that is not
// checked costs a counter increment.

// Defaults of the verification's sampling.
const (
	DefaultVerifyFirst = 8
	DefaultVerifyEvery = 64
)

// hashCheck is a worker's verification setup: its parsed engine_hash and
// the verifier of its candidates (shared by workers with one setting).
type hashCheck struct {
	setting  EngineHashSetting
	verifier *enginehash.Verifier
}

// verifyState is a rank's verification, guarded by rank.mu.
type verifyState struct {
	verdict    Verdict
	cand       enginehash.Candidate
	tagged     bool // verified with vLLM 0.33's tagged extra keys
	reason     string
	roots      uint64 // root stores seen since the last restart (sampling)
	rootsTotal uint64
	checked    uint64
	mismatches uint64
	chainOK    uint64
	chainBad   uint64
	chainWarn  bool
	// digests: each held block's full digest, by engine hash
	// (Options.VerifyChained only).
	digests map[uint64]enginehash.Digest
	// unknownRoots: the wire id of each root store that matched no known
	// scheme, by its content (rootContentKey), kept across restarts: the
	// same content named otherwise is the evidence of random ids.
	unknownRoots map[uint64]uint64
}

// reset forgets everything (the worker's engine_hash changed).
func (v *verifyState) reset() { *v = verifyState{} }

// restarted makes the next root stores be checked again: a restarted
// engine may have come back with another root.
func (v *verifyState) restarted() {
	v.roots = 0
	clear(v.digests)
}

func (v *verifyState) info() EngineHashInfo {
	e := EngineHashInfo{Verdict: v.verdict, Reason: v.reason, RootStores: v.rootsTotal, Checked: v.checked,
		Mismatches: v.mismatches, ChainChecked: v.chainOK + v.chainBad, ChainMismatches: v.chainBad}
	if v.verdict == VerdictVerified {
		e.Scheme, e.Seed = v.cand.Scheme, v.cand.Seed
	}
	return e
}

// hashCheckFor returns the verification setup of an engine_hash setting,
// built once per distinct setting.
func (x *Indexer) hashCheckFor(setting EngineHashSetting) (*hashCheck, error) {
	key := setting.String()
	x.checksMu.Lock()
	defer x.checksMu.Unlock()
	if hc, ok := x.checks[key]; ok {
		return hc, nil
	}
	hc := &hashCheck{setting: setting}
	if !setting.Off {
		v, err := enginehash.NewVerifier(setting.candidates(x.opts.EngineHashSeeds))
		if err != nil {
			return nil, fmt.Errorf("engine_hash %q: %w", key, err)
		}
		hc.verifier = v
	}
	if x.checks == nil {
		x.checks = map[string]*hashCheck{}
	}
	x.checks[key] = hc
	return hc, nil
}

// wantsCheck counts a root store and says whether to recompute it.
func (a *applier) wantsCheck() bool {
	v := &a.r.vs
	v.roots++
	v.rootsTotal++
	if v.verdict != VerdictVerified || a.x.opts.VerifyChained {
		return true
	}
	return v.roots <= uint64(a.x.opts.VerifyFirst) || v.roots%uint64(a.x.opts.VerifyEvery) == 0
}

// verifyStore checks a BlockStored's engine ids: its first block when it
// is a root store, and with Options.VerifyChained every block whose
// parent's digest is known. It runs before the store is applied and never
// changes what is indexed, only the verdict (and, in enforce mode, the
// rank's state).
func (a *applier) verifyStore(ev *ingest.Event) {
	hc := a.w.check.Load()
	if hc == nil || !verifiable(ev) {
		return
	}
	if hc.setting.Off {
		if a.r.vs.verdict == VerdictPending {
			a.hashUndecided("verification is off for this worker (engine_hash: off)")
		}
		return
	}
	chained := a.x.opts.VerifyChained
	if ev.ParentHash != nil {
		if chained && a.r.vs.verdict == VerdictVerified {
			if parent, ok := a.r.vs.digests[*ev.ParentHash]; ok {
				a.verifyChain(ev, 0, parent)
			}
		}
		return
	}
	if !a.wantsCheck() {
		return
	}
	st, ok := rootStoreOf(ev)
	if !ok {
		return
	}
	a.r.vs.checked++
	matches := hc.verifier.Match(st)
	switch {
	case len(matches) > 0:
		a.hashVerified(pick(matches, a.r.vs), st)
		if chained {
			a.remember(ev.BlockHashes[0], matches[0].Digest)
			a.verifyChain(ev, 1, matches[0].Digest)
		}
	case !st.Conclusive():
		a.hashUndecided("root stores carry a LoRA adapter whose path vLLM 0.33 hashes but its events do not carry; " +
			"waiting for a root store without LoRA")
	case hc.setting.seedUnknown():
		a.r.vs.mismatches++
		a.hashUndecided(fmt.Sprintf("%s ids depend on the engine's PYTHONHASHSEED, which the router was not told "+
			"(tried %q and engine_hash_seeds): set engine_hash to %s:SEED; without PYTHONHASHSEED its roots are random",
			hc.setting.Scheme, "0", hc.setting.Scheme))
	default:
		a.r.vs.mismatches++
		// An unknown scheme is not randomness: unstable takes evidence,
		// a root the rank was verified under now missed, or the same
		// content named otherwise (after a restart, or by another engine
		// that should agree: verify_peers.go); else unverifiable.
		evidence := a.randomRoot(st)
		if peer := a.peerDisagrees(hc, st); evidence == "" {
			evidence = peer
		}
		if evidence != "" || a.r.vs.verdict == VerdictVerified {
			a.hashUnstable(hc, st, evidence)
		} else {
			a.hashUndecided(fmt.Sprintf("root block id %d matches no scheme and seed the router knows (tried %s): "+
				"a scheme it does not know, or ids random per process, which the same tokens named otherwise after a restart, "+
				"or by another engine of the model with the same engine_hash, would show; "+
				"name the engine's scheme and seed in engine_hash (SCHEME:SEED); if the engine runs without a fixed seed: %s",
				st.WireID, candidatesText(hc.verifier.Candidates()), unstableFix))
		}
	}
}

// maxUnknownRoots bounds a rank's remembered unknown roots.
const maxUnknownRoots = 4096

// randomRoot remembers an unknown root store's wire id by its content
// and returns the evidence of randomness when the same content was named
// otherwise before ("" when not).
func (a *applier) randomRoot(st enginehash.RootStore) string {
	v := &a.r.vs
	key := rootContentKey(st)
	prev, seen := v.unknownRoots[key]
	if v.unknownRoots == nil || len(v.unknownRoots) >= maxUnknownRoots {
		v.unknownRoots = map[uint64]uint64{}
	}
	v.unknownRoots[key] = st.WireID
	if seen && prev != st.WireID {
		return fmt.Sprintf("the same root block's tokens were named %d before and %d now", prev, st.WireID)
	}
	return ""
}

// rootKeySeed keys rootContentKey for this process (the keys never leave
// it).
var rootKeySeed = maphash.MakeSeed()

// rootContentKey identifies what an engine hashed for a root block: its
// tokens, cache salt, extra keys and lookahead.
func rootContentKey(st enginehash.RootStore) uint64 {
	var h maphash.Hash
	h.SetSeed(rootKeySeed)
	var b [4]byte
	for _, t := range st.Tokens {
		binary.LittleEndian.PutUint32(b[:], t)
		_, _ = h.Write(b[:])
	}
	_, _ = h.WriteString("\x00" + st.CacheSalt + "\x00" + fmt.Sprint(st.ExtraKeys, st.Lookahead, st.TRTLLMLoRAID))
	return h.Sum64()
}

// verifiable reports whether a store's first block can be recomputed: a
// local full-attention store whose tokens fill its blocks.
func verifiable(ev *ingest.Event) bool {
	n := len(ev.BlockHashes)
	return n > 0 && ev.BlockSize > 0 && len(ev.TokenIDs) == n*ev.BlockSize && ev.Locality != "REMOTE" &&
		(ev.SpecKind == "" || ev.SpecKind == "full_attention")
}

// rootStoreOf is the first block of a root store as enginehash takes it.
// Extra keys that cannot be converted make it uncheckable (ok false).
func rootStoreOf(ev *ingest.Event) (enginehash.RootStore, bool) {
	st := enginehash.RootStore{Tokens: ev.TokenIDs[:ev.BlockSize], WireID: ev.BlockHashes[0], CacheSalt: ev.CacheSalt}
	if len(ev.ExtraKeys) > 0 {
		keys, err := enginehash.ExtraKeysFromValues(ev.ExtraKeys[0], ev.LoraName)
		if err != nil {
			return st, false
		}
		st.ExtraKeys = keys
	}
	if len(ev.LookaheadTokenIDs) > 0 {
		st.Lookahead = ev.LookaheadTokenIDs[0]
	}
	if ev.LoraID != nil && *ev.LoraID >= 0 && ev.LoraName == "" {
		id := uint64(*ev.LoraID) // TensorRT-LLM's LoRA id
		st.TRTLLMLoRAID = &id
	}
	return st, true
}

// pick prefers the candidate the rank is already verified under.
func pick(matches []enginehash.Match, v verifyState) enginehash.Match {
	if v.verdict == VerdictVerified {
		for _, m := range matches {
			if m.Candidate == v.cand {
				return m
			}
		}
	}
	return matches[0]
}

// hashVerified records a match.
func (a *applier) hashVerified(m enginehash.Match, st enginehash.RootStore) {
	v := &a.r.vs
	if v.verdict == VerdictVerified && v.cand == m.Candidate {
		return
	}
	prev := v.verdict
	prevCand := v.cand
	v.verdict, v.cand, v.tagged, v.reason = VerdictVerified, m.Candidate, m.TaggedKeys, ""
	a.r.verified.Store(&m.Candidate)
	a.verdictChanged = true
	log := a.x.opts.Logger.With("worker_id", a.r.w.ID, "dp_rank", a.r.w.DPRank, "model", a.w.key.Model,
		"scheme", string(m.Candidate.Scheme), "seed", m.Candidate.Seed)
	switch prev {
	case VerdictVerified:
		log.Warn("kvrouter: engine block ids now match another scheme or seed (the engine restarted with another configuration)",
			"previous", prevCand.String())
	case VerdictUnstable:
		log.Info("kvrouter: engine block ids verified again: the engine now hashes deterministically")
	default:
		log.Info("kvrouter: engine block ids verified: deterministic, reproduced from a root store", "block_id", st.WireID)
	}
}

// hashUndecided records a root store that cannot decide; it changes only a
// pending verdict.
func (a *applier) hashUndecided(reason string) {
	v := &a.r.vs
	if v.verdict != VerdictPending && v.verdict != VerdictUnverifiable {
		return
	}
	if v.verdict == VerdictUnverifiable && v.reason == reason {
		return
	}
	v.verdict, v.reason = VerdictUnverifiable, reason
	a.verdictChanged = true
	a.x.opts.Logger.Info("kvrouter: engine block ids cannot be verified yet: "+reason,
		"worker_id", a.r.w.ID, "dp_rank", a.r.w.DPRank, "model", a.w.key.Model)
}

// unstableFix is the fix for engine ids that no deterministic scheme
// reproduces.
const unstableFix = "set PYTHONHASHSEED (one value, e.g. 0) on every engine process; on vLLM use --prefix-caching-hash-algo sha256_cbor " +
	"(or sha256), whose default root is fixed since vLLM's NONE_HASH fix (upgrade an older vLLM), as the xxhash algorithms' is random; " +
	"if the engine already uses a fixed seed or scheme, name it in the worker's engine_hash (SCHEME:SEED) or engine_hash_seeds; " +
	"see docs/guides/hash-stability.md"

// hashUnstable records a conclusive root store that matches no candidate:
// logged once per transition with the fix; in enforce mode the rank is
// quarantined (or its quarantine clock restarts).
func (a *applier) hashUnstable(hc *hashCheck, st enginehash.RootStore, evidence string) {
	v := &a.r.vs
	r := a.r
	if v.verdict != VerdictUnstable {
		what := "matches no deterministic scheme and seed the router knows, and " + evidence
		if v.verdict == VerdictVerified {
			what = "no longer matches " + v.cand.String() + ", under which the worker was verified (it restarted with a random root?)"
		}
		v.reason = fmt.Sprintf("root block id %d %s (tried %s): engine block ids look random per process",
			st.WireID, what, candidatesText(hc.verifier.Candidates()))
		v.verdict = VerdictUnstable
		r.verified.Store(nil)
		a.verdictChanged = true
		a.x.opts.Logger.Error("kvrouter: engine block ids unstable: "+v.reason,
			"worker_id", r.w.ID, "dp_rank", r.w.DPRank, "model", a.w.key.Model, "engine_hash", hc.setting.String(),
			"fix", unstableFix)
	}
	if !a.x.enforcing() {
		return
	}
	if r.State() == StateQuarantined {
		r.cleanSince = a.x.now()
		return
	}
	a.quarantineFor("unstable engine block ids: "+v.reason, unstableFix)
}

// candidatesText lists candidates briefly for a log line.
func candidatesText(cs []enginehash.Candidate) string {
	if len(cs) > 4 {
		return strconv.Itoa(len(cs)) + " candidates: " + cs[0].String() + ", " + cs[1].String() + ", ..."
	}
	out := ""
	for i, c := range cs {
		if i > 0 {
			out += ", "
		}
		out += c.String()
	}
	return out
}

// verifyChain recomputes blocks from..n-1 of a store from the digest of
// the block before from (Options.VerifyChained): each full digest is kept
// for its children. A mismatch is counted and warned about once; it does
// not change the verdict (the root was verified: what differs is what the
// event does not show, e.g. a LoRA path or lookahead tokens).
func (a *applier) verifyChain(ev *ingest.Event, from int, parent enginehash.Digest) {
	v := &a.r.vs
	s := v.cand.Scheme
	bs := ev.BlockSize
	for i := from; i < len(ev.BlockHashes); i++ {
		var extra []enginehash.ExtraKey
		if i < len(ev.ExtraKeys) && len(ev.ExtraKeys[i]) > 0 {
			keys, err := enginehash.ExtraKeysFromValues(ev.ExtraKeys[i], ev.LoraName)
			if err != nil {
				return
			}
			extra = keys
			if v.tagged {
				for j := range extra {
					extra[j] = extra[j].Tag()
				}
			}
		}
		var look []uint32
		if i < len(ev.LookaheadTokenIDs) {
			look = ev.LookaheadTokenIDs[i]
		}
		d, err := s.LookaheadBlockDigest(parent, ev.TokenIDs[i*bs:(i+1)*bs], extra, look)
		if err != nil {
			return
		}
		if s.WireID(d) != ev.BlockHashes[i] {
			v.chainBad++
			if !v.chainWarn {
				v.chainWarn = true
				a.x.opts.Logger.Warn("kvrouter: a chained engine block id does not match its recomputation under the verified scheme "+
					"(logged once per rank; counted); its root matched, so the engine hashes something its events do not carry",
					"worker_id", a.r.w.ID, "dp_rank", a.r.w.DPRank, "model", a.w.key.Model, "scheme", v.cand.String(),
					"block_id", ev.BlockHashes[i])
			}
			return
		}
		v.chainOK++
		a.remember(ev.BlockHashes[i], d)
		parent = d
	}
}

// remember keeps a block's full digest for its children.
func (a *applier) remember(h uint64, d enginehash.Digest) {
	if a.r.vs.digests == nil {
		a.r.vs.digests = map[uint64]enginehash.Digest{}
	}
	a.r.vs.digests[h] = d
}

// forgetDigests drops removed blocks' digests.
func (r *rank) forgetDigests(hashes []uint64) {
	if len(r.vs.digests) == 0 {
		return
	}
	for _, h := range hashes {
		delete(r.vs.digests, h)
	}
}
