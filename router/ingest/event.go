package ingest

// Batch is one message of an engine's KV event stream, decoded: vLLM's
// EventBatch (SGLang sends the same) with the seq frame that carried it.
type Batch struct {
	Topic     string
	Seq       uint64  // the 8-byte big-endian seq frame, from 0 per publisher
	Timestamp float64 // seconds, as the engine sent it
	// DPRank is the batch's data_parallel_rank; nil when the engine sent
	// none (then the rank is the subscriber's: the port offset).
	DPRank *uint32
	Events []Event
}

// Kind says which engine event an Event is.
type Kind uint8

// The engine event kinds (vLLM's class names).
const (
	BlockStored      Kind = 1
	BlockRemoved     Kind = 2
	AllBlocksCleared Kind = 3
)

func (k Kind) String() string {
	switch k {
	case BlockStored:
		return "BlockStored"
	case BlockRemoved:
		return "BlockRemoved"
	case AllBlocksCleared:
		return "AllBlocksCleared"
	}
	return "unknown"
}

// Event is one engine KV event, normalized from whichever wire shape it
// came in (map tagged "type" or positional array). Only the fields of its
// Kind are meaningful; absent optional fields are zero (nil pointers, "").
// Engine hashes are u64: signed ints reinterpreted, bytes taken as their
// last 8 bytes big-endian.
type Event struct {
	Kind Kind

	// BlockStored and BlockRemoved.
	BlockHashes []uint64
	Medium      string // "GPU", "CPU", ...; "" = not sent
	GroupIdx    *int64
	Locality    string // "LOCAL", "REMOTE"; "" = not sent
	Ownership   string

	// BlockStored only.
	ParentHash        *uint64 // nil = at the root
	TokenIDs          []uint32
	BlockSize         int
	LoraID            *int64 // deprecated upstream; carried, not used
	LoraName          string
	ExtraKeys         [][]any // one entry per block; nil entry (or nil slice) = none
	SpecKind          string  // kv_cache_spec_kind; "" = not sent
	SlidingWindow     *int64
	CacheSalt         string // SGLang's key; vLLM puts the salt in the first block's extra keys
	SessionID         string
	LookaheadTokenIDs [][]uint32 // vLLM 0.33: per block, tokens its engine id also covers
}
