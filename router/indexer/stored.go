package indexer

import (
	"errors"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/ingest"
)

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
	a.verifyStore(ev)
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
	if keep > 0 && !a.roomLocked(keep) {
		a.skip(ev.BlockHashes[:keep], SkipRankFull, ev)
		a.refuseFull(keep)
		keep = 0
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
	// They are remembered up to the rank's bound (MaxRankBlocks): beyond
	// it a child store is core's parent_not_found instead of a skip.
	if reason != SkipMedium && reason != SkipRemote {
		if r.skippedHashes == nil {
			r.skippedHashes = map[uint64]struct{}{}
		}
		for _, h := range hashes {
			if len(r.skippedHashes) >= a.x.opts.MaxRankBlocks {
				break
			}
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
	case SkipRankFull:
		attrs = append(attrs, "max_rank_blocks", a.x.opts.MaxRankBlocks, "fix", "see the refused-events warning")
	}
	a.x.opts.Logger.Warn(msg+" (logged once per worker rank and reason; counted in skipped blocks)", attrs...)
}

func (r *rank) isSkipped(h uint64) bool {
	_, ok := r.skippedHashes[h]
	return ok
}
