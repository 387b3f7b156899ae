package protocol

import "encoding/json"

// Operation names. OpRawHash and OpIndex are optional: a testee lists the
// operations it serves in its hello answer.
const (
	OpHello          = "hello"
	OpBlockHashes    = "block_hashes"
	OpSequenceHashes = "sequence_hashes"
	OpSeed           = "seed"
	OpChainStep      = "chain_step"
	OpRawHash        = "raw_hash"
	OpIndex          = "index"
)

// Index modes of an index request.
const (
	ModeWarn    = "warn"
	ModeEnforce = "enforce"
)

// Error kinds of a failed index step (they mirror the ABI status names).
const (
	KindDecode          = "decode"
	KindRejected        = "rejected"
	KindInvalidArgument = "invalid_argument"
	KindInternal        = "internal"
)

// Options are the hashing options; on the wire all four keys are present.
// A nil LoraName or CacheNamespace is JSON null; MMHashes keeps the
// difference between null, [] and a null entry so that testees see exactly
// what the vector holds.
type Options struct {
	LoraName       *string `json:"lora_name"`
	CacheNamespace *string `json:"cache_namespace"`
	Eagle          bool    `json:"eagle"`
	MMHashes       [][]U64 `json:"mm_hashes"`
}

// Lora returns the LoRA name, "" when absent.
func (o Options) Lora() string { return deref(o.LoraName) }

// Namespace returns the cache namespace, "" when absent.
func (o Options) Namespace() string { return deref(o.CacheNamespace) }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Step is one step of an index script: exactly one field is set.
type Step struct {
	Apply          *ApplyStep       `json:"apply,omitempty"`
	FindMatches    *FindMatchesStep `json:"find_matches,omitempty"`
	RemoveWorker   *WorkerStep      `json:"remove_worker,omitempty"`
	ClearAllBlocks *WorkerStep      `json:"clear_all_blocks,omitempty"`
	Stats          *StatsStep       `json:"stats,omitempty"`
	Dump           *DumpStep        `json:"dump,omitempty"`
}

// ApplyStep applies one Dynamo KvCacheEvent. Event is the event's JSON
// text carried as a JSON string: its u64 values are bare JSON integers, so
// it is handed to the binding's apply-JSON entry point byte for byte and
// never re-parsed by a testee (a JavaScript JSON.parse would round them).
type ApplyStep struct {
	WorkerID U64    `json:"worker_id"`
	Event    string `json:"event"`
}

// FindMatchesStep scores workers for a query of local block hashes.
type FindMatchesStep struct {
	Hashes    []U64 `json:"hashes"`
	EarlyExit bool  `json:"early_exit"`
}

// MarshalJSON writes an empty query as [], never null: every list of
// the protocol is present.
func (f FindMatchesStep) MarshalJSON() ([]byte, error) {
	type plain FindMatchesStep
	return json.Marshal(plain{Hashes: nonNil(f.Hashes), EarlyExit: f.EarlyExit})
}

// WorkerStep names a worker for remove_worker and clear_all_blocks.
type WorkerStep struct {
	WorkerID U64 `json:"worker_id"`
}

// StatsStep asks for the index statistics; it has no fields.
type StatsStep struct{}

// DumpStep asks for the index as router events; it has no fields.
type DumpStep struct{}

// Request is any request; only the fields of its Op are meaningful.
type Request struct {
	ID int64  `json:"id"`
	Op string `json:"op"`

	Tokens    []uint32 // block_hashes
	BlockSize int64    // block_hashes
	Options   Options  // block_hashes

	BlockHashes []U64 // sequence_hashes

	LoraName       *string // seed
	CacheNamespace *string // seed

	Parent U64 // chain_step
	Local  U64 // chain_step

	BytesHex string // raw_hash

	Mode  string // index
	Steps []Step // index
}

// wireRequest is the union as decoded: absent fields stay zero.
type wireRequest struct {
	ID             int64    `json:"id"`
	Op             string   `json:"op"`
	Tokens         []uint32 `json:"tokens"`
	BlockSize      int64    `json:"block_size"`
	Options        Options  `json:"options"`
	BlockHashes    []U64    `json:"block_hashes"`
	LoraName       *string  `json:"lora_name"`
	CacheNamespace *string  `json:"cache_namespace"`
	Parent         U64      `json:"parent"`
	Local          U64      `json:"local"`
	BytesHex       string   `json:"bytes_hex"`
	Mode           string   `json:"mode"`
	Steps          []Step   `json:"steps"`
}

// MarshalJSON writes only the fields of the request's operation, all of
// them always present (an empty token list is [], not absent), so that a
// hand-written reader in any language sees one fixed shape per op.
func (r Request) MarshalJSON() ([]byte, error) {
	head := struct {
		ID int64  `json:"id"`
		Op string `json:"op"`
	}{r.ID, r.Op}
	switch r.Op {
	case OpBlockHashes:
		tokens := r.Tokens
		if tokens == nil {
			tokens = []uint32{}
		}
		return json.Marshal(struct {
			ID        int64    `json:"id"`
			Op        string   `json:"op"`
			Tokens    []uint32 `json:"tokens"`
			BlockSize int64    `json:"block_size"`
			Options   Options  `json:"options"`
		}{r.ID, r.Op, tokens, r.BlockSize, r.Options})
	case OpSequenceHashes:
		return json.Marshal(struct {
			ID          int64  `json:"id"`
			Op          string `json:"op"`
			BlockHashes []U64  `json:"block_hashes"`
		}{r.ID, r.Op, nonNil(r.BlockHashes)})
	case OpSeed:
		return json.Marshal(struct {
			ID             int64   `json:"id"`
			Op             string  `json:"op"`
			LoraName       *string `json:"lora_name"`
			CacheNamespace *string `json:"cache_namespace"`
		}{r.ID, r.Op, r.LoraName, r.CacheNamespace})
	case OpChainStep:
		return json.Marshal(struct {
			ID     int64  `json:"id"`
			Op     string `json:"op"`
			Parent U64    `json:"parent"`
			Local  U64    `json:"local"`
		}{r.ID, r.Op, r.Parent, r.Local})
	case OpRawHash:
		return json.Marshal(struct {
			ID       int64  `json:"id"`
			Op       string `json:"op"`
			BytesHex string `json:"bytes_hex"`
		}{r.ID, r.Op, r.BytesHex})
	case OpIndex:
		steps := r.Steps
		if steps == nil {
			steps = []Step{}
		}
		return json.Marshal(struct {
			ID    int64  `json:"id"`
			Op    string `json:"op"`
			Mode  string `json:"mode"`
			Steps []Step `json:"steps"`
		}{r.ID, r.Op, r.Mode, steps})
	}
	return json.Marshal(head)
}

// UnmarshalJSON reads any request.
func (r *Request) UnmarshalJSON(data []byte) error {
	var w wireRequest
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*r = Request{
		ID: w.ID, Op: w.Op,
		Tokens: w.Tokens, BlockSize: w.BlockSize, Options: w.Options,
		BlockHashes: w.BlockHashes,
		LoraName:    w.LoraName, CacheNamespace: w.CacheNamespace,
		Parent: w.Parent, Local: w.Local,
		BytesHex: w.BytesHex,
		Mode:     w.Mode, Steps: w.Steps,
	}
	return nil
}

func nonNil(v []U64) []U64 {
	if v == nil {
		return []U64{}
	}
	return v
}

// Hello is the answer to hello.
type Hello struct {
	Binding        string   `json:"binding"`
	LibraryVersion string   `json:"library_version"`
	SpecVersion    string   `json:"spec_version"`
	Ops            []string `json:"ops"`
}

// Match is one worker's score in a find_matches step result.
type Match struct {
	WorkerID U64    `json:"worker_id"`
	DPRank   uint32 `json:"dp_rank"`
	Score    uint32 `json:"score"`
	TreeSize U64    `json:"tree_size"`
}

// StepResult is the result of one index step: OK for apply,
// remove_worker and clear_all_blocks; Error (a Kind* constant) and Message
// when the step failed; Scores for find_matches; Stats for stats; Events
// (router event JSON texts) for dump.
type StepResult struct {
	OK      bool            `json:"ok,omitempty"`
	Error   string          `json:"error,omitempty"`
	Message string          `json:"message,omitempty"`
	Scores  *[]Match        `json:"scores,omitempty"`
	Stats   json.RawMessage `json:"stats,omitempty"`
	Events  *[]string       `json:"events,omitempty"`
}
