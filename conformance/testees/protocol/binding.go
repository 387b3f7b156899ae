package protocol

// Binding is what a Go testee adapts: each method is one call of the
// binding under test, with types translated and nothing computed.
type Binding interface {
	// Hello names the binding and lists the operations it serves.
	Hello() Hello
	BlockHashes(tokens []uint32, blockSize int64, opts Options) ([]uint64, error)
	SequenceHashes(blockHashes []uint64) ([]uint64, error)
	Seed(loraName, cacheNamespace string) (uint64, error)
	ChainStep(parent, local uint64) (uint64, error)
}

// RawHasher is implemented by bindings that expose XXH3 over raw bytes.
type RawHasher interface {
	RawHash(b []byte) (uint64, error)
}

// Indexer is implemented by bindings that expose the index.
type Indexer interface {
	// NewIndex returns a fresh index in mode ModeWarn or ModeEnforce.
	NewIndex(mode string) (Index, error)
	// ErrorKind classifies an error of an Index method as one of the Kind*
	// constants, the way the binding's own error types do.
	ErrorKind(err error) string
}

// Index is one index of the binding under test.
type Index interface {
	// ApplyJSON applies a Dynamo KvCacheEvent given as its JSON text.
	ApplyJSON(workerID uint64, event []byte) error
	// FindMatches returns one Match per scored worker, in any order.
	FindMatches(localHashes []uint64, earlyExit bool) ([]Match, error)
	RemoveWorker(workerID uint64) error
	ClearAllBlocks(workerID uint64) error
	// StatsJSON returns the binding's statistics JSON text.
	StatsJSON() ([]byte, error)
	// Dump returns the index as router events, one JSON text each.
	Dump() ([]string, error)
	Close() error
}
