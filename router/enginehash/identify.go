package enginehash

import (
	"fmt"
	"strconv"
)

// Candidate is one hypothesis about how an engine names its blocks: a scheme
// and, for vLLM, the seed string its NONE_HASH came from.
type Candidate struct {
	Scheme Scheme
	Seed   string // vLLM: NONE_HASH's seed string; other schemes: unused ("")
}

// String is "scheme" or "scheme seed=<quoted seed>", for logs and verdicts.
func (c Candidate) String() string {
	if !c.Scheme.IsVLLM() {
		return string(c.Scheme)
	}
	return string(c.Scheme) + " seed=" + strconv.Quote(c.Seed)
}

// DefaultCandidates is what `engine_hash: auto` tries: vLLM's SHA-256
// schemes under the fixed default seed and PYTHONHASHSEED=0 (what Dynamo's
// launchers set), the xxhash schemes under "0" only (their default root is
// random), SGLang and TensorRT-LLM v2, then every extra seed the operator
// lists, for all four vLLM schemes. Duplicates are dropped.
func DefaultCandidates(extraSeeds ...string) []Candidate {
	var out []Candidate
	seen := make(map[Candidate]bool)
	add := func(c Candidate) {
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	for _, s := range []Scheme{VLLMSHA256, VLLMSHA256CBOR} {
		add(Candidate{Scheme: s, Seed: DefaultVLLMSeed})
		add(Candidate{Scheme: s, Seed: "0"})
	}
	add(Candidate{Scheme: SGLangSHA256})
	add(Candidate{Scheme: TRTLLMV2SHA256})
	add(Candidate{Scheme: TRTLLMV1BlockKey})
	for _, s := range []Scheme{VLLMXXHash, VLLMXXHashCBOR} {
		add(Candidate{Scheme: s, Seed: "0"})
	}
	for _, seed := range extraSeeds {
		for _, s := range []Scheme{VLLMSHA256, VLLMSHA256CBOR, VLLMXXHash, VLLMXXHashCBOR} {
			add(Candidate{Scheme: s, Seed: seed})
		}
	}
	return out
}

// RootStore is a stored block at the root of an engine's tree (its event's
// parent_block_hash is null), as the router sees it.
type RootStore struct {
	// Tokens are the block's tokens: exactly one block (for SGLang with
	// EAGLE, SGLangBigrams of the page's tokens and the one after it).
	Tokens []uint32
	// ExtraKeys are vLLM's extra keys for this block, as its event carries
	// them (see ExtraKeysFromValues); nil for none. Their Tagged flags are
	// ignored: Match tries both forms.
	ExtraKeys []ExtraKey
	// LoRAPath is the adapter's path, when the router knows it: vLLM 0.33
	// hashes it but its events do not carry it.
	LoRAPath string
	// Lookahead is vLLM 0.33's lookahead_token_ids entry for this block
	// (nil when lookahead hashing is off).
	Lookahead []uint32
	// CacheSalt is SGLang's and TensorRT-LLM's request salt ("" for none).
	CacheSalt string
	// TRTLLMLoRAID is TensorRT-LLM's LoRA id (v2's reuse scope lora_id, v1's
	// lora_task_id), when the request has one.
	TRTLLMLoRAID *uint64
	// WireID is the id the engine published, as u64 (a signed i64 from
	// SGLang or TensorRT-LLM reinterpreted, never clamped).
	WireID uint64
}

// Conclusive reports whether "no candidate matches st" can be blamed on the
// engine. It cannot when st has a LoRA key but no LoRAPath: vLLM 0.33 hashes
// the adapter's path, which its events do not carry, so such a store fails
// to match even on a deterministic engine. Base verdicts on other root
// stores (most have no LoRA), or set LoRAPath from the deployment.
func (st RootStore) Conclusive() bool {
	if st.LoRAPath != "" {
		return true
	}
	for _, k := range st.ExtraKeys {
		if k.Kind == ExtraLoRA {
			return false
		}
	}
	return true
}

// Match is a candidate that reproduces a root store, with the block's full
// digest: the parent a router needs to verify the chained blocks after it.
type Match struct {
	Candidate Candidate
	Digest    Digest
	// TaggedKeys: the store's extra keys matched in vLLM 0.33's tagged form
	// (false without extra keys, where both forms hash the same).
	TaggedKeys bool
}

// Verifier checks root stores against a fixed list of candidates. vLLM roots
// depend only on the candidate, so they are computed once here; SGLang and
// TensorRT-LLM roots depend on the store's salt and are computed per store.
// A Verifier is read-only after NewVerifier: safe for concurrent use.
type Verifier struct {
	candidates []Candidate
	vllmRoots  []Digest // per candidate; zero for non-vLLM schemes
}

// NewVerifier validates candidates and precomputes their vLLM roots.
func NewVerifier(candidates []Candidate) (*Verifier, error) {
	v := &Verifier{candidates: append([]Candidate(nil), candidates...), vllmRoots: make([]Digest, len(candidates))}
	for i, c := range candidates {
		if err := c.Scheme.valid(); err != nil {
			return nil, fmt.Errorf("candidate %d: %w", i, err)
		}
		if !c.Scheme.IsVLLM() {
			if c.Seed != "" {
				return nil, fmt.Errorf("enginehash: candidate %d: %s has no seed (got %q)", i, c.Scheme, c.Seed)
			}
			continue
		}
		root, err := VLLMRoot(c.Scheme, c.Seed)
		if err != nil {
			return nil, fmt.Errorf("candidate %d: %w", i, err)
		}
		v.vllmRoots[i] = root
	}
	return v, nil
}

// Candidates returns the verifier's candidates, in order.
func (v *Verifier) Candidates() []Candidate { return append([]Candidate(nil), v.candidates...) }

// Match returns every candidate under which st's block hashes to st.WireID,
// in candidate order: none for an engine with a random root (or a scheme or
// seed not listed), normally exactly one otherwise. A candidate whose scheme
// cannot take the store's inputs (extra keys on a non-vLLM scheme) simply
// does not match.
func (v *Verifier) Match(st RootStore) []Match {
	var out []Match
	forms := vllmKeyForms(st)
	for i, c := range v.candidates {
		var m Match
		var ok bool
		switch {
		case c.Scheme.IsVLLM():
			m, ok = matchVLLM(c.Scheme, v.vllmRoots[i], st, forms)
		case len(st.ExtraKeys) != 0 || len(st.Lookahead) != 0:
			// SGLang and TensorRT-LLM have no per-block extra keys: a store
			// with them is not theirs.
		case c.Scheme == TRTLLMV1BlockKey:
			m.Digest, ok = matchTRTLLMV1(st)
		default:
			m.Digest, ok = matchRootScheme(c.Scheme, st)
		}
		if ok {
			m.Candidate = c
			out = append(out, m)
		}
	}
	return out
}

// keyForms are a store's vLLM extra keys in both forms.
type keyForms struct {
	untagged, tagged []ExtraKey // tagged is nil without extra keys
}

func vllmKeyForms(st RootStore) keyForms {
	f := keyForms{untagged: untag(st.ExtraKeys)}
	if len(st.ExtraKeys) > 0 {
		f.tagged = make([]ExtraKey, len(st.ExtraKeys))
		for i, k := range st.ExtraKeys {
			f.tagged[i] = k.Tag()
			if k.Kind == ExtraLoRA {
				f.tagged[i].Path = st.LoRAPath
			}
		}
	}
	return f
}

// matchVLLM tries the store's keys untagged (vLLM up to 0.32), then tagged
// (0.33).
func matchVLLM(s Scheme, root Digest, st RootStore, forms keyForms) (Match, bool) {
	if d, err := s.LookaheadBlockDigest(root, st.Tokens, forms.untagged, st.Lookahead); err == nil && s.WireID(d) == st.WireID {
		return Match{Digest: d}, true
	}
	if forms.tagged == nil {
		return Match{}, false
	}
	if d, err := s.LookaheadBlockDigest(root, st.Tokens, forms.tagged, st.Lookahead); err == nil && s.WireID(d) == st.WireID {
		return Match{Digest: d, TaggedKeys: true}, true
	}
	return Match{}, false
}

// matchRootScheme checks SGLang and TensorRT-LLM v2, whose salt and LoRA
// are in the root digest.
func matchRootScheme(s Scheme, st RootStore) (Digest, bool) {
	root := SGLangRoot(st.CacheSalt)
	if s == TRTLLMV2SHA256 {
		scope := TRTLLMScope{LoRAID: st.TRTLLMLoRAID}
		if st.CacheSalt != "" {
			id := TRTLLMSaltID(st.CacheSalt)
			scope.SaltID = &id
		}
		root = TRTLLMRoot(scope)
	}
	d, err := s.BlockDigest(root, st.Tokens, nil)
	return d, err == nil && s.WireID(d) == st.WireID
}

// matchTRTLLMV1 checks TensorRT-LLM v1, which mixes the salt id into the
// root block and the LoRA task id into every block.
func matchTRTLLMV1(st RootStore) (Digest, bool) {
	var keys [2]ExtraKey
	extra := keys[:0]
	if st.CacheSalt != "" {
		extra = append(extra, TRTLLMSaltIDKey(TRTLLMSaltID(st.CacheSalt)))
	}
	if st.TRTLLMLoRAID != nil {
		extra = append(extra, TRTLLMLoRATaskKey(*st.TRTLLMLoRAID))
	}
	d, err := trtllmV1Digest(TRTLLMV1Root(), st.Tokens, extra)
	return d, err == nil && d.firstU64BE() == st.WireID
}

// untag returns keys in their untagged form (keys itself when already so).
func untag(keys []ExtraKey) []ExtraKey {
	for i, k := range keys {
		if k.Tagged {
			out := append([]ExtraKey(nil), keys...)
			for j := i; j < len(out); j++ {
				out[j].Tagged = false
			}
			return out
		}
	}
	return keys
}

// ExtraKeysFromValues converts one block's extra keys as vLLM's events carry
// them (untagged; router/ingest's [][]any entries: string, []byte, and
// [identifier, offset] arrays for multimodal items) into ExtraKeys. loraName
// is the event's lora_name: when set, a leading string is the LoRA name
// (vLLM puts it first); other strings are the cache salt. The kinds matter
// only for vLLM 0.33's tagged form.
func ExtraKeysFromValues(vals []any, loraName string) ([]ExtraKey, error) {
	if len(vals) == 0 {
		return nil, nil
	}
	out := make([]ExtraKey, 0, len(vals))
	for i, v := range vals {
		switch x := v.(type) {
		case string:
			if i == 0 && loraName != "" {
				out = append(out, LoRAKey(x))
			} else {
				out = append(out, SaltKey(x))
			}
		case []byte:
			out = append(out, PromptEmbedsKey(x))
		case []any:
			k, err := mmKeyFromValues(x)
			if err != nil {
				return nil, fmt.Errorf("enginehash: extra key %d: %w", i, err)
			}
			out = append(out, k)
		default:
			return nil, fmt.Errorf("enginehash: extra key %d: unsupported type %T", i, v)
		}
	}
	return out, nil
}

func mmKeyFromValues(x []any) (ExtraKey, error) {
	if len(x) != 2 {
		return ExtraKey{}, fmt.Errorf("multimodal key of %d elements, want (identifier, offset)", len(x))
	}
	id, ok := x[0].(string)
	if !ok {
		return ExtraKey{}, fmt.Errorf("multimodal identifier of type %T, want a string", x[0])
	}
	switch off := x[1].(type) {
	case int64:
		return MMKey(id, off), nil
	case int:
		return MMKey(id, int64(off)), nil
	case uint64:
		if off > 1<<63-1 {
			return ExtraKey{}, fmt.Errorf("multimodal offset %d out of range", off)
		}
		return MMKey(id, int64(off)), nil
	}
	return ExtraKey{}, fmt.Errorf("multimodal offset of type %T, want an int", x[1])
}
