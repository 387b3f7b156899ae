package proxy

import (
	"time"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/indexer"
)

// DashboardWorker is one worker on the dashboard.
type DashboardWorker struct {
	WorkerID    uint64            `json:"worker_id"`
	Model       string            `json:"model"`
	BaseURL     string            `json:"base_url"`
	Healthy     bool              `json:"healthy"`
	State       string            `json:"state"` // its worst rank's
	Reason      string            `json:"reason,omitempty"`
	Blocks      uint64            `json:"blocks"`
	Inflight    int               `json:"inflight"`
	ActiveBlks  uint64            `json:"active_blocks"`
	PrefillToks uint64            `json:"prefill_tokens"`
	Violations  uint64            `json:"violations"`
	ByKind      map[string]uint64 `json:"violations_by_kind"`
	Quarantines uint64            `json:"quarantines"`
	Restarts    uint64            `json:"restarts"`
	// EngineHash is the verification of the engine's block ids, its least
	// trusted rank's: "verified (scheme, seed)", "pending",
	// "unverifiable" or "unstable"; EngineHashReason says why.
	EngineHash       string `json:"engine_hash"`
	EngineHashReason string `json:"engine_hash_reason,omitempty"`
}

// verdictDistrust orders verdicts from most to least trusted, so a
// worker shows its least trusted rank's.
var verdictDistrust = map[indexer.Verdict]int{
	indexer.VerdictVerified: 0, indexer.VerdictPending: 1, indexer.VerdictUnverifiable: 2, indexer.VerdictUnstable: 3,
}

// verdictText is a rank's verdict as the dashboard shows it.
func verdictText(e indexer.EngineHashInfo) string {
	if e.Verdict != indexer.VerdictVerified {
		return e.Verdict.String()
	}
	if e.Seed == "" {
		return "verified (" + string(e.Scheme) + ")"
	}
	return "verified (" + string(e.Scheme) + ", seed " + e.Seed + ")"
}

// Dashboard is GET /v1/dashboard: the fleet and the proxy's figures.
type Dashboard struct {
	Time    time.Time         `json:"time"`
	Workers []DashboardWorker `json:"workers"`
	Snapshot
}

// Dashboard returns the page's data now.
func (p *Proxy) Dashboard() Dashboard {
	infos := p.ix.Workers()
	load := p.rt.Stats()
	inflight := p.Inflight()
	d := Dashboard{Time: time.Now().UTC(), Snapshot: p.stats.Snapshot(), Workers: make([]DashboardWorker, 0, len(infos))}
	for _, info := range infos {
		dw := DashboardWorker{
			WorkerID: info.Spec.WorkerID, Model: info.Spec.Model, BaseURL: info.Spec.BaseURL,
			Healthy: info.Healthy, State: indexer.StateLive.String(), Inflight: inflight[info.Spec.WorkerID],
			ByKind: map[string]uint64{},
		}
		worst := indexer.StateLive
		distrust := -1
		for _, r := range info.Ranks {
			if d := verdictDistrust[r.EngineHash.Verdict]; d > distrust {
				distrust, dw.EngineHash, dw.EngineHashReason = d, verdictText(r.EngineHash), r.EngineHash.Reason
			}
			dw.Blocks += r.Blocks
			dw.Quarantines += r.Quarantines
			dw.Restarts += r.Restarts
			for k, n := range r.Violations {
				if n > 0 {
					dw.Violations += n
					dw.ByKind[violationName(k)] += n
				}
			}
			if r.State > worst {
				worst, dw.Reason = r.State, r.Reason
			}
		}
		dw.State = worst.String()
		for _, wl := range load.Workers {
			if wl.Worker.ID == info.Spec.WorkerID {
				dw.ActiveBlks += wl.ActiveBlocks
				dw.PrefillToks += wl.PrefillTokens
			}
		}
		d.Workers = append(d.Workers, dw)
	}
	return d
}

func violationName(k int) string { return core.Violation(k).String() }
