package serve

import (
	"strings"

	"github.com/kvhash/kvhash/router/indexer"
)

// engineHashView is a rank's engine-hash verdict in GET /v1/workers: what
// the router concluded from recomputing its root stores' block ids (see
// docs/guides/hash-stability.md). scheme and seed are set when verified.
type engineHashView struct {
	Verdict         string `json:"verdict"` // pending, verified, unverifiable, unstable
	Scheme          string `json:"scheme"`
	Seed            string `json:"seed"`
	Reason          string `json:"reason"`
	RootStores      uint64 `json:"root_stores"`
	Checked         uint64 `json:"checked"`
	Mismatches      uint64 `json:"mismatches"`
	ChainChecked    uint64 `json:"chain_checked"`
	ChainMismatches uint64 `json:"chain_mismatches"`
	// Disagrees: another worker of the same model and tenant is verified
	// under another scheme or seed (see engine_hash_agreement).
	Disagrees bool `json:"disagrees"`
}

func engineHashViewOf(e indexer.EngineHashInfo) engineHashView {
	return engineHashView{
		Verdict: e.Verdict.String(), Scheme: string(e.Scheme), Seed: e.Seed, Reason: e.Reason,
		RootStores: e.RootStores, Checked: e.Checked, Mismatches: e.Mismatches,
		ChainChecked: e.ChainChecked, ChainMismatches: e.ChainMismatches, Disagrees: e.Disagrees,
	}
}

// engineHashSetting is a worker's configured engine_hash as shown: "auto"
// when it registered none.
func engineHashSetting(s string) string {
	if strings.TrimSpace(s) == "" {
		return "auto"
	}
	return s
}

// agreementView is one model's verified schemes in GET /v1/workers'
// engine_hash_agreement: more than one group means its workers name the
// same block differently (fine for routing, not for KV transfer between
// them or a shared offload tier).
type agreementView struct {
	Model  string           `json:"model"`
	Tenant string           `json:"tenant"`
	Agree  bool             `json:"agree"`
	Groups []agreementGroup `json:"groups"`
}

type agreementGroup struct {
	Scheme  string          `json:"scheme"`
	Seed    string          `json:"seed"`
	Workers []agreementRank `json:"workers"`
}

type agreementRank struct {
	WorkerID uint64 `json:"worker_id"`
	DPRank   uint32 `json:"dp_rank"`
}

func agreementViews(as []indexer.HashAgreement) []agreementView {
	out := make([]agreementView, 0, len(as))
	for _, a := range as {
		v := agreementView{Model: a.Key.Model, Tenant: a.Key.Tenant, Agree: a.Agrees(), Groups: make([]agreementGroup, 0, len(a.Groups))}
		for _, g := range a.Groups {
			grp := agreementGroup{Scheme: string(g.Candidate.Scheme), Seed: g.Candidate.Seed, Workers: make([]agreementRank, 0, len(g.Ranks))}
			for _, w := range g.Ranks {
				grp.Workers = append(grp.Workers, agreementRank{WorkerID: w.ID, DPRank: w.DPRank})
			}
			v.Groups = append(v.Groups, grp)
		}
		out = append(out, v)
	}
	return out
}
