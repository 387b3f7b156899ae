package indexer

import (
	"errors"
	"fmt"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/ingest"
)

// applier applies one batch's (or one HTTP event's) events of one rank,
// with the rank's mutex held.
type applier struct {
	x       *Indexer
	w       *worker
	r       *rank
	src     *ingest.Source // nil for HTTP events: no replay to ask for
	eventID uint64
	// replay: a quarantine wants the stream replayed. It is asked for
	// once the rank's mutex is released: the requester may call back.
	replay *ingest.Source
}

func (a *applier) engineEvent(ev *ingest.Event) {
	switch ev.Kind {
	case ingest.BlockStored:
		a.stored(ev)
	case ingest.BlockRemoved:
		a.removed(ev)
	case ingest.AllBlocksCleared:
		a.cleared()
	}
}

// stored translates a BlockStored: the blocks it can hash faithfully are
// applied; the rest of the store, from the first block it cannot, is
// counted by reason and remembered as skipped.
func (a *applier) stored(ev *ingest.Event) {
	r := a.r
	n := len(ev.BlockHashes)
	if n == 0 {
		r.events[KindStored][OutcomeApplied]++
		return
	}
	keep, reason := a.indexable(ev)
	salt := ""
	if keep > 0 {
		salt = a.salt(ev)
		var mmReason SkipReason
		var cut int
		cut, mmReason = extraKeysCut(ev, keep)
		if cut < keep {
			keep, reason = cut, mmReason
		}
	}
	if keep < n {
		a.skip(ev.BlockHashes[keep:], reason, ev)
	}
	if keep == 0 {
		r.events[KindStored][OutcomeSkipped]++
		return
	}
	bs := a.x.opts.BlockSize
	local, err := core.AppendBlockHashes(r.local[:0], ev.TokenIDs[:keep*bs], bs, coreOptions(ev.LoraName, salt))
	if err != nil { // cannot happen: sizes were checked; count it rather than index wrong
		a.skip(ev.BlockHashes[:keep], SkipTokenCount, ev)
		r.events[KindStored][OutcomeSkipped]++
		return
	}
	r.local = local
	blocks := r.blocks[:0]
	for i, h := range ev.BlockHashes[:keep] {
		blocks = append(blocks, core.StoredBlock{BlockHash: h, TokensHash: local[i]})
	}
	r.blocks = blocks
	err = a.w.index.ApplyStored(r.w, a.eventID, ev.ParentHash, blocks)
	if !errors.Is(err, core.ErrEventRejected) {
		r.storesSince++
		if salt != "" {
			if r.salts == nil {
				r.salts = map[uint64]string{}
			}
			for _, h := range ev.BlockHashes[:keep] {
				r.salts[h] = salt
			}
		}
	}
	a.outcome(KindStored, err)
}

// indexable returns how many leading blocks of a store can be hashed, and
// why the rest cannot.
func (a *applier) indexable(ev *ingest.Event) (int, SkipReason) {
	n := len(ev.BlockHashes)
	switch {
	case !a.x.mediumIndexed(ev.Medium):
		return 0, SkipMedium
	case ev.Locality == "REMOTE":
		return 0, SkipRemote
	case ev.SpecKind != "" && ev.SpecKind != "full_attention":
		return 0, SkipSpecKind
	case len(ev.TokenIDs) == 0 || ev.BlockSize == 0:
		return 0, SkipPlaceholder
	case ev.BlockSize != a.x.opts.BlockSize:
		return 0, SkipBlockSize
	case len(ev.TokenIDs) != n*ev.BlockSize:
		return 0, SkipTokenCount
	case ev.ParentHash != nil && a.r.isSkipped(*ev.ParentHash):
		return 0, SkipParentSkipped
	}
	return n, 0
}

func (x *Indexer) mediumIndexed(m string) bool {
	if m == "" || m == "GPU" {
		return true
	}
	for _, o := range x.opts.IndexMedia {
		if o == m {
			return true
		}
	}
	return false
}

// salt returns the store's cache salt: SGLang's cache_salt key, else the
// salt vLLM puts in the first block's extra keys (a request's first block
// only), else the parent's remembered salt.
func (a *applier) salt(ev *ingest.Event) string {
	if ev.CacheSalt != "" {
		return ev.CacheSalt
	}
	if len(ev.ExtraKeys) > 0 {
		if s := vllmSalt(ev.ExtraKeys[0], ev.LoraName); s != "" {
			return s
		}
	}
	if ev.ParentHash != nil {
		return a.r.salts[*ev.ParentHash]
	}
	return ""
}

// vllmSalt finds the cache salt in one block's extra keys. vLLM lays them
// out as the LoRA name, then multimodal (identifier, offset) pairs, then
// the salt, then a prompt-embeds digest (bytes): the salt is the string
// that follows the LoRA name's string, or the first string when the
// event has no LoRA name.
func vllmSalt(keys []any, loraName string) string {
	loraSeen := loraName == ""
	for _, k := range keys {
		s, ok := k.(string)
		if !ok {
			continue
		}
		if !loraSeen && s == loraName {
			loraSeen = true
			continue
		}
		return s
	}
	return ""
}

// extraKeysCut returns the first of the first keep blocks whose extra
// keys hold something core cannot fold in from the event (keep when none):
// multimodal pairs or a prompt-embeds digest.
func extraKeysCut(ev *ingest.Event, keep int) (int, SkipReason) {
	for i := 0; i < keep && i < len(ev.ExtraKeys); i++ {
		for _, k := range ev.ExtraKeys[i] {
			switch k.(type) {
			case nil, string, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
				// Strings are the LoRA name and the salt; ints an old
				// release's LoRA id: all already in the seed.
			case []byte:
				return i, SkipPromptEmbeds
			default:
				return i, SkipMultimodal
			}
		}
	}
	return keep, 0
}

// skip counts blocks not indexed, remembers their hashes, and warns once
// per rank and reason.
func (a *applier) skip(hashes []uint64, reason SkipReason, ev *ingest.Event) {
	r := a.r
	r.skipped[reason] += uint64(len(hashes))
	// Blocks of tiers and localities not indexed are never removed from
	// the index either (their removals are ignored the same way), so only
	// the other reasons need their hashes remembered.
	if reason != SkipMedium && reason != SkipRemote {
		if r.skippedHashes == nil {
			r.skippedHashes = map[uint64]struct{}{}
		}
		for _, h := range hashes {
			r.skippedHashes[h] = struct{}{}
		}
	}
	if r.warned&(1<<reason) != 0 {
		return
	}
	r.warned |= 1 << reason
	attrs := []any{"worker_id", r.w.ID, "dp_rank", r.w.DPRank, "model", a.w.key.Model, "reason", reason.String()}
	msg := "kvrouter: engine blocks not indexed"
	switch reason {
	case SkipBlockSize:
		attrs = append(attrs, "engine_block_size", ev.BlockSize, "router_block_size", a.x.opts.BlockSize,
			"fix", "run every engine and the router with the same block size (vLLM --block-size, kvrouter --block-size); hybrid models' other attention groups are expected here")
	case SkipSpecKind:
		attrs = append(attrs, "kv_cache_spec_kind", ev.SpecKind)
	case SkipMedium:
		attrs = append(attrs, "medium", ev.Medium, "fix", "list the medium in the router's indexed media to score these blocks")
	case SkipTokenCount:
		attrs = append(attrs, "token_ids", len(ev.TokenIDs), "blocks", len(ev.BlockHashes), "block_size", ev.BlockSize)
	case SkipMultimodal:
		attrs = append(attrs, "note", "multimodal blocks' content is not their token ids; they are not matched")
	}
	a.x.opts.Logger.Warn(msg+" (logged once per worker rank and reason; counted in skipped blocks)", attrs...)
}

func (r *rank) isSkipped(h uint64) bool {
	_, ok := r.skippedHashes[h]
	return ok
}

// removed applies a BlockRemoved: hashes of skipped blocks are forgotten,
// not sent to core (which never saw them).
func (a *applier) removed(ev *ingest.Event) {
	r := a.r
	if !a.x.mediumIndexed(ev.Medium) || ev.Locality == "REMOTE" {
		r.events[KindRemoved][OutcomeSkipped]++
		return
	}
	hashes := ev.BlockHashes
	if len(r.skippedHashes) > 0 {
		hashes = make([]uint64, 0, len(ev.BlockHashes))
		for _, h := range ev.BlockHashes {
			if r.isSkipped(h) {
				delete(r.skippedHashes, h)
				continue
			}
			hashes = append(hashes, h)
		}
	}
	for _, h := range hashes {
		delete(r.salts, h)
	}
	if len(hashes) == 0 && len(ev.BlockHashes) > 0 {
		r.events[KindRemoved][OutcomeSkipped]++
		return
	}
	a.outcome(KindRemoved, a.w.index.ApplyRemoved(r.w, a.eventID, hashes))
}

// cleared applies AllBlocksCleared: the index is exact again, so a
// degraded rank is live.
func (a *applier) cleared() {
	r := a.r
	a.w.index.ClearWorker(r.w)
	r.forgetLocked()
	r.events[KindCleared][OutcomeApplied]++
	if r.State() == StateDegraded {
		r.setStateLocked(StateLive, "", a.x.now())
		a.x.opts.Logger.Info("kvrouter: worker live again: the engine cleared its cache",
			"worker_id", r.w.ID, "dp_rank", r.w.DPRank)
	}
}

// outcome counts an event's outcome from core's answer and applies the
// guardrails: in enforce mode a live rank with an enforced violation is
// quarantined; a quarantined rank's content violations restart its clock.
func (a *applier) outcome(kind EventKind, err error) {
	r := a.r
	switch {
	case err == nil:
		r.events[kind][OutcomeApplied]++
		return
	case errors.Is(err, core.ErrEventRejected):
		r.events[kind][OutcomeRejected]++
	default:
		r.events[kind][OutcomeViolation]++
	}
	var se *core.StabilityError
	if !errors.As(err, &se) || !se.Enforced {
		return
	}
	switch r.State() {
	case StateLive:
		a.quarantine(se, err)
	case StateQuarantined:
		if contentViolation(err) {
			r.cleanSince = a.x.now()
		}
	}
}

// contentViolation reports whether err holds a violation that a clear
// and a partial rebuild cannot explain: a hash mismatch or a self
// reference. (Parents and removed blocks not found are expected while a
// cleared rank rebuilds.)
func contentViolation(err error) bool {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		var se *core.StabilityError
		if errors.As(e, &se) && (se.Kind == core.ViolationHashMismatch || se.Kind == core.ViolationSelfReference) {
			return true
		}
	}
	return false
}

const stabilityFix = "use one --block-size on every engine and the router, one PYTHONHASHSEED on every engine process, " +
	"and a deterministic hash (vLLM --prefix-caching-hash-algo sha256_cbor or sha256); see docs/guides/hash-stability.md"

// quarantine clears a rank whose hashes proved unstable and asks its
// engine to replay.
func (a *applier) quarantine(se *core.StabilityError, err error) {
	r := a.r
	now := a.x.now()
	a.w.index.ClearWorker(r.w)
	r.forgetLocked()
	r.quarantines++
	reason := fmt.Sprintf("unstable engine hashes: %s (event %d, hash %d)", se.Kind, se.EventID, se.Hash)
	r.setStateLocked(StateQuarantined, reason, now)
	a.x.opts.Logger.Error("kvrouter: worker quarantined: "+reason+
		"; its blocks were cleared and it is scored by load only until its events apply cleanly",
		"worker_id", r.w.ID, "dp_rank", r.w.DPRank, "model", a.w.key.Model,
		"settle", a.x.opts.QuarantineSettle.String(), "error", err.Error(), "fix", stabilityFix)
	if a.src != nil && a.x.opts.Replay != nil {
		src := *a.src
		a.replay = &src
	}
}

// requestReplay asks the stream of a quarantined rank for everything its
// engine still buffers. Called without locks held.
func (x *Indexer) requestReplay(src ingest.Source, r core.Worker) {
	if err := x.opts.Replay.RequestReplay(src, 0); err != nil {
		x.opts.Logger.Warn("kvrouter: replay request for a quarantined worker failed",
			"worker_id", r.ID, "dp_rank", r.DPRank, "error", err.Error())
		return
	}
	x.opts.Logger.Info("kvrouter: replay requested for the quarantined worker",
		"worker_id", r.ID, "dp_rank", r.DPRank)
}
