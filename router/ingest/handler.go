package ingest

// Source names one subscribed stream: the publisher of one worker rank.
// With one bound endpoint that engines connect to, the Source comes from
// the message's topic (see Resolver).
type Source struct {
	Model    string
	WorkerID uint64
	DPRank   uint32
	Endpoint string // where the router subscribed (or the bound endpoint)
	Topic    string
}

// StreamEventKind says what happened to a stream, as opposed to the KV
// events it carried.
type StreamEventKind uint8

// What a Handler hears about a stream besides its batches.
const (
	// StreamConnected: the subscriber is connected (or reconnected).
	StreamConnected StreamEventKind = iota + 1
	// StreamDisconnected: the connection dropped; the subscriber retries.
	StreamDisconnected
	// StreamGapReplayed: seqs [From, To) were missing and came back from
	// the engine's replay endpoint; their batches were delivered, in order,
	// before this event.
	StreamGapReplayed
	// StreamGapLost: seqs [From, To) are gone for good (no replay endpoint,
	// or its buffer no longer reaches back). The worker's blocks are no
	// longer exact: the handler clears them and marks the worker degraded.
	StreamGapLost
	// StreamRestarted: the seq went back to 0, a new engine process. The
	// handler clears the worker before the batch that follows.
	StreamRestarted
	// StreamMalformed: a message could not be decoded (frame count,
	// MessagePack, unknown tag, wrong type) and was skipped; Err says why.
	StreamMalformed
)

// StreamEvent is one thing that happened to a stream.
type StreamEvent struct {
	Kind     StreamEventKind
	From, To uint64 // gap kinds: the missing seqs [From, To)
	Err      error  // StreamMalformed, StreamDisconnected: why
}

// Handler receives each stream's batches in seq order (replayed ones
// included) and what happens to the stream. Calls for one Source never
// overlap; calls for different Sources may run concurrently.
type Handler interface {
	HandleBatch(src Source, b *Batch)
	HandleStream(src Source, ev StreamEvent)
}
