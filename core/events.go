package core

import (
	"cmp"
	"fmt"
)

// Worker is one data-parallel rank of one inference worker: the unit the
// index tracks blocks for and scores matches by.
type Worker struct {
	ID     uint64
	DPRank uint32
}

// Compare orders workers by ID, then by rank: the order of every sorted
// worker list the index returns.
func (w Worker) Compare(o Worker) int {
	if c := cmp.Compare(w.ID, o.ID); c != 0 {
		return c
	}
	return cmp.Compare(w.DPRank, o.DPRank)
}

func (w Worker) String() string {
	return fmt.Sprintf("worker %d rank %d", w.ID, w.DPRank)
}

// StorageTier names where a router event's blocks live. The index treats
// every tier alike; the tier only travels with the event.
type StorageTier string

// The storage tiers of Dynamo's router events.
const (
	TierDevice     StorageTier = "device"
	TierHostPinned StorageTier = "host_pinned"
	TierDisk       StorageTier = "disk"
	TierExternal   StorageTier = "external"
)

// valid reports whether t is a known tier; the empty tier means the
// default, device.
func (t StorageTier) valid() bool {
	switch t {
	case "", TierDevice, TierHostPinned, TierDisk, TierExternal:
		return true
	}
	return false
}

// MMObject is one multimodal object (an image, ...) whose placeholder
// tokens fall in a block: its hash and the [start, end) token offsets
// within the block.
type MMObject struct {
	MMHash  uint64
	Offsets [][2]uint64
}

// StoredBlock is one block of a stored event.
type StoredBlock struct {
	BlockHash  uint64     // the engine's external hash
	TokensHash uint64     // the canonical local hash
	MMObjects  []MMObject // nil = no mm_extra_info; empty non-nil = an empty mm_objects list
}

// EventKind says which of the three KV events an Event is.
type EventKind uint8

// The event kinds. The zero value is no kind at all and is rejected.
const (
	EventStored  EventKind = 1
	EventRemoved EventKind = 2
	EventCleared EventKind = 3
)

func (k EventKind) String() string {
	switch k {
	case EventStored:
		return "stored"
	case EventRemoved:
		return "removed"
	case EventCleared:
		return "cleared"
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// Event is Dynamo's KvCacheEvent: what one engine rank reports about its
// KV cache. Only the fields of its Kind are meaningful.
type Event struct {
	ID            uint64
	DPRank        uint32
	Kind          EventKind
	ParentHash    *uint64       // stored: external hash of the block before Blocks[0]; nil = root
	StartPosition *uint64       // stored, optional; carried, not used by the index
	Blocks        []StoredBlock // stored
	BlockHashes   []uint64      // removed: external hashes
}

// RouterEvent is an Event tagged with the worker that sent it: the form
// of Dynamo's event plane and of Index.Dump.
type RouterEvent struct {
	WorkerID    uint64
	StorageTier StorageTier // "" means TierDevice
	Event       Event
}
