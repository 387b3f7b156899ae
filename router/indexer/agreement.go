package indexer

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/enginehash"
)

// Cross-engine agreement: workers verified under one scheme and seed name
// the same block with the same id. Two workers of one (model, tenant)
// verified under different ones route fine (the router hashes tokens
// itself) but cannot share KV: disaggregated prefill/decode transfer and
// shared offload tiers look blocks up by the engine's id, and every lookup
// across the two misses.

// HashAgreement is one index's verified engine-hash candidates.
type HashAgreement struct {
	Key ModelKey
	// Groups: the verified ranks by candidate, sorted by candidate; more
	// than one group is a disagreement.
	Groups []HashGroup
}

// HashGroup is the ranks verified under one candidate.
type HashGroup struct {
	Candidate enginehash.Candidate
	Ranks     []core.Worker // sorted by worker id, then rank
}

// Agrees reports whether every verified rank uses one candidate.
func (h HashAgreement) Agrees() bool { return len(h.Groups) <= 1 }

// HashAgreements returns, for every index with a verified rank, its
// verified ranks grouped by candidate, sorted by key.
func (x *Indexer) HashAgreements() []HashAgreement {
	x.mu.RLock()
	keys := make([]ModelKey, 0, len(x.members))
	for k := range x.members {
		keys = append(keys, k)
	}
	x.mu.RUnlock()
	slices.SortFunc(keys, compareKeys)
	out := make([]HashAgreement, 0, len(keys))
	for _, k := range keys {
		if a := x.agreementOf(k); len(a.Groups) > 0 {
			out = append(out, a)
		}
	}
	return out
}

// agreementOf groups an index's verified ranks by candidate. It reads each
// rank's atomic candidate: no rank mutex is taken.
func (x *Indexer) agreementOf(key ModelKey) HashAgreement {
	x.mu.RLock()
	var ranks []*rank
	for _, w := range x.members[key] {
		ranks = append(ranks, w.sorted...)
	}
	x.mu.RUnlock()
	byCand := map[enginehash.Candidate][]core.Worker{}
	for _, r := range ranks {
		if c := r.verified.Load(); c != nil {
			byCand[*c] = append(byCand[*c], r.w)
		}
	}
	a := HashAgreement{Key: key, Groups: make([]HashGroup, 0, len(byCand))}
	for c, ws := range byCand {
		a.Groups = append(a.Groups, HashGroup{Candidate: c, Ranks: ws})
	}
	slices.SortFunc(a.Groups, func(p, q HashGroup) int {
		return cmp.Or(cmp.Compare(p.Candidate.Scheme, q.Candidate.Scheme), cmp.Compare(p.Candidate.Seed, q.Candidate.Seed))
	})
	return a
}

// checkAgreement logs, once per distinct situation, that an index's
// workers are verified under different candidates (and when they agree
// again). Called without locks held, after a verdict changed.
func (x *Indexer) checkAgreement(key ModelKey) {
	a := x.agreementOf(key)
	sig := ""
	if !a.Agrees() {
		parts := make([]string, len(a.Groups))
		for i, g := range a.Groups {
			parts[i] = g.Candidate.String() + " " + workersText(g.Ranks)
		}
		sig = strings.Join(parts, "; ")
	}
	x.agreeMu.Lock()
	last := x.agreeLogged[key]
	if last == sig {
		x.agreeMu.Unlock()
		return
	}
	if x.agreeLogged == nil {
		x.agreeLogged = map[ModelKey]string{}
	}
	x.agreeLogged[key] = sig
	x.agreeMu.Unlock()
	if sig == "" {
		x.opts.Logger.Info("kvrouter: the workers of the model agree on one engine hash scheme and seed again",
			"model", key.Model, "tenant", key.Tenant)
		return
	}
	x.opts.Logger.Warn("kvrouter: workers of one model use different engine hash schemes or seeds: "+sig+
		"; routing is unaffected, but the same block has different ids on them, so KV transfer between them "+
		"(disaggregated prefill/decode) and shared offload tiers miss",
		"model", key.Model, "tenant", key.Tenant,
		"fix", "run every engine of the model with one --prefix-caching-hash-algo and one PYTHONHASHSEED")
}

func workersText(ws []core.Worker) string {
	var b strings.Builder
	b.WriteString("(")
	for i, w := range ws {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("worker ")
		b.WriteString(uitoa(w.ID))
		b.WriteString(" rank ")
		b.WriteString(uitoa(uint64(w.DPRank)))
	}
	b.WriteString(")")
	return b.String()
}

func uitoa(n uint64) string { return strconv.FormatUint(n, 10) }

// disagreeing returns the ranks of an agreement that are verified while
// another rank of the index is verified under another candidate.
func (h HashAgreement) disagreeing() map[core.Worker]bool {
	if h.Agrees() {
		return nil
	}
	out := map[core.Worker]bool{}
	for _, g := range h.Groups {
		for _, w := range g.Ranks {
			out[w] = true
		}
	}
	return out
}

// resetVerificationLocked forgets every rank's verification (its
// engine_hash setting changed). The caller holds Indexer.mu.
func (w *worker) resetVerificationLocked() {
	for _, r := range w.sorted {
		r.mu.Lock()
		r.vs.reset()
		r.verified.Store(nil)
		r.mu.Unlock()
	}
}
