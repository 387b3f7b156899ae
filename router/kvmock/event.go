package kvmock

import "github.com/kvhash/kvhash/router/enginehash"

// Digest is an engine block id: one digest of vLLM's chain (32 bytes for
// the sha256 algorithms, 16 for xxhash), as router/enginehash computes it.
type Digest = enginehash.Digest

// EventKind says which vLLM KV event an Event is.
type EventKind uint8

// vLLM's three KV cache events.
const (
	EventBlockStored EventKind = iota + 1
	EventBlockRemoved
	EventAllBlocksCleared
)

func (k EventKind) String() string {
	switch k {
	case EventBlockStored:
		return "BlockStored"
	case EventBlockRemoved:
		return "BlockRemoved"
	case EventAllBlocksCleared:
		return "AllBlocksCleared"
	}
	return "unknown"
}

// Event is one KV cache event as the simulated engine produces it, before
// encoding: digests stay whole so the wire encoder can send bytes or ints.
type Event struct {
	Kind    EventKind
	Digests []Digest // BlockStored, BlockRemoved
	Parent  *Digest  // BlockStored: the block before the first one; nil at the root
	Tokens  []uint32 // BlockStored: every token of the stored blocks
	// BlockStored: the request's LoRA adapter ("" and 0 = none) and, per
	// block, its extra keys (nil = none; ExtraKeys nil = no block has any).
	LoraName  string
	LoraID    int
	ExtraKeys [][]string
}

// EventSink receives events in the order the cache produced them. It is
// called with the engine's lock held: it must not block.
type EventSink interface {
	Emit(ev Event)
}

// discardEvents is the sink of an engine that publishes nothing.
type discardEvents struct{}

func (discardEvents) Emit(Event) {}
