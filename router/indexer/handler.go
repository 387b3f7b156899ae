package indexer

import (
	"github.com/kvhash/kvhash/router/ingest"
)

var _ ingest.Handler = (*Indexer)(nil)

// HandleBatch applies one engine batch: its events, in order, to the
// rank's index (the batch's dp rank when it names one, else the
// Source's). It never fails: what cannot be applied is counted.
func (x *Indexer) HandleBatch(src ingest.Source, b *ingest.Batch) {}

// HandleStream records what happened to a stream: restarts clear the rank,
// lost gaps clear it and mark it degraded, malformed messages are counted.
func (x *Indexer) HandleStream(src ingest.Source, ev ingest.StreamEvent) {}
