package indexer

import (
	"fmt"
	"slices"
	"sync"

	"github.com/kvhash/kvhash/core"
)

// PromptOptions are what a prompt's local hashes depend on besides its
// tokens: the same LoRA name and cache salt the engine folded in.
type PromptOptions struct {
	LoraName  string
	CacheSalt string
}

// HashPrompt returns the canonical local hashes of a prompt's full blocks
// at the router's block size: the one place queries hash prompts.
func (x *Indexer) HashPrompt(tokens []uint32, po PromptOptions) ([]uint64, error) {
	return x.AppendPromptHashes(nil, tokens, po)
}

// AppendPromptHashes is HashPrompt appending to dst (no allocation when
// dst has room).
func (x *Indexer) AppendPromptHashes(dst []uint64, tokens []uint32, po PromptOptions) ([]uint64, error) {
	out, err := core.AppendBlockHashes(dst, tokens, x.opts.BlockSize, coreOptions(po.LoraName, po.CacheSalt))
	if err != nil {
		return dst, fmt.Errorf("indexer: hash prompt: %w", err)
	}
	return out, nil
}

func coreOptions(lora, salt string) core.Options {
	return core.Options{LoraName: lora, CacheNamespace: salt}
}

func (x *Indexer) index(key ModelKey) (*core.Index, error) {
	key = key.canonical()
	x.mu.RLock()
	ix, ok := x.indexes[key]
	x.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: model %q tenant %q", ErrUnknownModel, key.Model, key.Tenant)
	}
	return ix, nil
}

// Overlaps returns, for a query's local hashes, each live rank's count of
// consecutive leading blocks it holds (ranks with none are absent), sorted
// by worker. Degraded and quarantined ranks are left out: they score by
// load only. With all=true they are included (Dynamo's /query shows the
// index as it is).
func (x *Indexer) Overlaps(key ModelKey, local []uint64, all bool) ([]Overlap, error) {
	return x.AppendOverlaps(nil, key, local, all)
}

// AppendOverlaps is Overlaps appending to dst (no allocation when dst has
// room; the routing path reuses its buffers).
func (x *Indexer) AppendOverlaps(dst []Overlap, key ModelKey, local []uint64, all bool) ([]Overlap, error) {
	ix, err := x.index(key)
	if err != nil {
		return dst, err
	}
	sc := matchPool.Get().(*[]core.Match)
	matches := ix.AppendMatches((*sc)[:0], local, false)
	x.mu.RLock()
	for _, m := range matches {
		if !all && x.stateLocked(m.Worker) != StateLive {
			continue
		}
		dst = append(dst, Overlap{Worker: m.Worker, Blocks: m.Score, TreeSize: m.TreeSize})
	}
	x.mu.RUnlock()
	*sc = matches
	matchPool.Put(sc)
	if dst == nil {
		dst = []Overlap{}
	}
	return dst, nil
}

var matchPool = sync.Pool{New: func() any { s := make([]core.Match, 0, 64); return &s }}

// stateLocked returns a rank's state; unknown ranks count as live (the
// index only holds ranks the registry created).
func (x *Indexer) stateLocked(w core.Worker) State {
	if wk, ok := x.workers[w.ID]; ok {
		if r, ok := wk.ranks[w.DPRank]; ok {
			return r.shownState()
		}
	}
	return StateLive
}

// Candidates returns every rank of the healthy workers of a (model,
// tenant), with its state, sorted by worker: the ranks a request may go
// to. Unhealthy workers (SetHealthy) are left out.
func (x *Indexer) Candidates(key ModelKey) ([]Candidate, error) {
	return x.AppendCandidates(nil, key)
}

// AppendCandidates is Candidates appending to dst.
func (x *Indexer) AppendCandidates(dst []Candidate, key ModelKey) ([]Candidate, error) {
	key = key.canonical()
	x.mu.RLock()
	defer x.mu.RUnlock()
	if _, ok := x.indexes[key]; !ok {
		return dst, fmt.Errorf("%w: model %q tenant %q", ErrUnknownModel, key.Model, key.Tenant)
	}
	for _, w := range x.members[key] {
		if !w.healthy.Load() {
			continue
		}
		for _, r := range w.sorted {
			dst = append(dst, Candidate{Worker: r.w, State: r.shownState()})
		}
	}
	return dst, nil
}

// Dump returns one index as router events (core's Dump).
func (x *Indexer) Dump(key ModelKey) ([]core.RouterEvent, error) {
	ix, err := x.index(key)
	if err != nil {
		return nil, err
	}
	return ix.Dump(), nil
}

// Sizes returns every index's size, sorted by key.
func (x *Indexer) Sizes() []IndexSize {
	x.mu.RLock()
	out := make([]IndexSize, 0, len(x.indexes))
	ixs := make([]*core.Index, 0, len(x.indexes))
	for k, ix := range x.indexes {
		out = append(out, IndexSize{Key: k})
		ixs = append(ixs, ix)
	}
	x.mu.RUnlock()
	for i, ix := range ixs {
		s := ix.Stats()
		out[i].Nodes = s.Nodes
		for _, w := range s.Workers {
			out[i].Pairs += w.Blocks
		}
	}
	slices.SortFunc(out, func(a, b IndexSize) int { return compareKeys(a.Key, b.Key) })
	return out
}
