package indexer

import (
	"time"

	"github.com/kvhash/kvhash/core"
)

// WorkerSpec is what registering a worker says about it: the fields of
// kvrouter's POST /v1/workers and Dynamo's standalone-indexer /register.
type WorkerSpec struct {
	WorkerID       uint64 `json:"worker_id"`
	Model          string `json:"model"`
	Tenant         string `json:"tenant,omitempty"` // "" = the default tenant
	Endpoint       string `json:"endpoint,omitempty"`
	ReplayEndpoint string `json:"replay_endpoint,omitempty"`
	DPSize         int    `json:"dp_size"` // ranks 0..DPSize-1; 0 is taken as 1
	Topic          string `json:"topic,omitempty"`
	BaseURL        string `json:"base_url,omitempty"`
	// EngineHash names the engine's block-hash scheme, against which its
	// root stores are verified: "auto" (or ""), "SCHEME" or "SCHEME:SEED"
	// (see ParseEngineHash).
	EngineHash string `json:"engine_hash,omitempty"`
}

// ModelKey names one index: a model and a tenant ("" by default).
type ModelKey struct {
	Model  string `json:"model"`
	Tenant string `json:"tenant"`
}

// DefaultTenant is what Dynamo's API calls the tenant kvrouter calls "":
// the two names are one tenant on every API.
const DefaultTenant = "default"

// CanonicalTenant returns the one name of a tenant: "" for DefaultTenant.
func CanonicalTenant(t string) string {
	if t == DefaultTenant {
		return ""
	}
	return t
}

// canonical returns the key with its tenant's one name.
func (k ModelKey) canonical() ModelKey {
	k.Tenant = CanonicalTenant(k.Tenant)
	return k
}

// State is a worker rank's trust level; see the package doc.
type State uint8

// The rank states.
const (
	StateLive State = iota
	StateDegraded
	StateQuarantined
	// StateConnecting: a live rank whose event stream has not connected
	// yet (Options.AwaitConnect): scored by load only, since its blocks
	// (a snapshot's) may be stale. Only shown: the rank's own state
	// machine never takes it.
	StateConnecting
)

func (s State) String() string {
	switch s {
	case StateLive:
		return "live"
	case StateDegraded:
		return "degraded"
	case StateQuarantined:
		return "quarantined"
	case StateConnecting:
		return "connecting"
	}
	return "unknown"
}

// MarshalText writes the state's name.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// SkipReason says why blocks of a BlockStored event were not indexed.
type SkipReason uint8

// The reasons blocks are not indexed. Each counts blocks, per rank.
const (
	// SkipBlockSize: the event's block_size differs from the router's
	// (this block and the rest of the store).
	SkipBlockSize SkipReason = iota
	// SkipSpecKind: kv_cache_spec_kind other than "full_attention".
	SkipSpecKind
	// SkipRemote: locality REMOTE.
	SkipRemote
	// SkipPlaceholder: a token-less store (no token ids or block size 0),
	// as offload tiers send.
	SkipPlaceholder
	// SkipMedium: a medium other than GPU that is not configured.
	SkipMedium
	// SkipTokenCount: len(token_ids) != len(block_hashes) * block_size.
	SkipTokenCount
	// SkipMultimodal: the block's extra keys carry multimodal objects,
	// whose hashes core cannot reproduce from the event.
	SkipMultimodal
	// SkipPromptEmbeds: the block's extra keys carry a prompt-embeds
	// digest: its content is not its token ids.
	SkipPromptEmbeds
	// SkipParentSkipped: the store's parent was itself not indexed, so the
	// chain cannot be placed.
	SkipParentSkipped
	// SkipRankFull: the store would take the rank beyond
	// Options.MaxRankBlocks; it was refused whole.
	SkipRankFull

	NumSkipReasons
)

var skipNames = [NumSkipReasons]string{
	SkipBlockSize:     "block_size",
	SkipSpecKind:      "kv_cache_spec_kind",
	SkipRemote:        "remote",
	SkipPlaceholder:   "placeholder",
	SkipMedium:        "medium",
	SkipTokenCount:    "token_count",
	SkipMultimodal:    "multimodal",
	SkipPromptEmbeds:  "prompt_embeds",
	SkipParentSkipped: "parent_skipped",
	SkipRankFull:      "rank_full",
}

func (r SkipReason) String() string {
	if r < NumSkipReasons {
		return skipNames[r]
	}
	return "unknown"
}

// EventKind indexes the event counters: the engine event kinds.
type EventKind uint8

// The counted event kinds.
const (
	KindStored EventKind = iota
	KindRemoved
	KindCleared
	NumEventKinds
)

func (k EventKind) String() string {
	return [...]string{"stored", "removed", "cleared", "unknown"}[min(k, NumEventKinds)]
}

// Outcome says what became of an event.
type Outcome uint8

// The counted outcomes of an event.
const (
	// OutcomeApplied: applied without a violation.
	OutcomeApplied Outcome = iota
	// OutcomeViolation: applied, with a stability violation that did not
	// stop it (hash mismatch, duplicate store). Only in enforce mode: in
	// warn mode core does not return these, the event counts as applied,
	// and the violation shows in the rank's Violations.
	OutcomeViolation
	// OutcomeRejected: core rejected it or part of it (parent not found,
	// block not found, self reference).
	OutcomeRejected
	// OutcomeSkipped: nothing of it was indexable (every block skipped).
	OutcomeSkipped
	NumOutcomes
)

func (o Outcome) String() string {
	return [...]string{"applied", "violation", "rejected", "skipped", "unknown"}[min(o, NumOutcomes)]
}

// RankInfo is one (worker, dp rank)'s state and counters, a copy.
type RankInfo struct {
	Worker      core.Worker
	State       State
	Reason      string    // why it is degraded or quarantined; "" when live
	Since       time.Time // when it entered State
	Connected   bool      // the stream's last connect/disconnect
	HaveSeq     bool      // a batch was handled, LastSeq is set
	LastSeq     uint64
	StreamRank  uint32    // the stream (Source.DPRank) LastSeq belongs to; see RankState
	LastEventAt time.Time // when the last batch or event was handled
	// LagSeconds: at the last batch, how far the engine's batch timestamp
	// was behind the router's clock (0 when the engine sent none).
	LagSeconds  float64
	Events      [NumEventKinds][NumOutcomes]uint64
	Skipped     [NumSkipReasons]uint64
	Gaps        uint64 // lost gaps (StreamGapLost)
	Replayed    uint64 // gaps filled from replay (StreamGapReplayed)
	Restarts    uint64
	Malformed   uint64
	Quarantines uint64
	// EngineHash is the verification of the engine's block ids.
	EngineHash EngineHashInfo
	// Blocks, Unstable and Violations are core's Stats for this rank.
	Blocks     uint64
	Unstable   bool
	Violations [core.NumViolations]uint64
}

// WorkerInfo is one registered worker: its spec, health flag and ranks.
type WorkerInfo struct {
	Spec    WorkerSpec
	Healthy bool
	Ranks   []RankInfo // sorted by rank
}

// Overlap is one rank's prefix match for a query.
type Overlap struct {
	Worker   core.Worker
	Blocks   uint32 // consecutive leading query blocks it holds
	TreeSize uint64 // blocks it holds in all
}

// Candidate is a worker rank a request may be routed to.
type Candidate struct {
	Worker core.Worker
	State  State
}

// IndexSize is one index's size, for metrics.
type IndexSize struct {
	Key   ModelKey
	Nodes uint64 // tree nodes (blocks, shared ones once)
	Pairs uint64 // (worker rank, block) pairs
}
