package ingest

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Stats are the subscriber's counters: plain atomics, read at any time
// (the service exports them as Prometheus metrics; see Collector).
type Stats struct {
	Messages       atomic.Uint64 // messages received, live and replayed
	Batches        atomic.Uint64 // batches delivered to the Handler
	UnknownEvents  atomic.Uint64 // events of an unknown kind, left out of their batch
	Duplicates     atomic.Uint64 // live messages already delivered by a replay
	Gaps           atomic.Uint64 // seq jumps detected
	GapsReplayed   atomic.Uint64 // ... filled by the replay endpoint
	GapsLost       atomic.Uint64 // ... not filled (reported as StreamGapLost)
	ReplaysOK      atomic.Uint64 // replay requests answered up to the end marker
	ReplaysFailed  atomic.Uint64 // ... not configured, unreachable, timed out or short
	CatchUps       atomic.Uint64 // fresh streams' replays from seq 0 at connect, answered (catchUp)
	CatchUpsFailed atomic.Uint64 // ... not answered
	Restarts       atomic.Uint64 // seqs that went back (an engine restart)
	Connects       atomic.Uint64
	Disconnects    atomic.Uint64
	HandlerPanics  atomic.Uint64 // Handler calls that panicked (recovered)
	QueueWaits     atomic.Uint64 // times a receiver waited for a full per-source queue
	WorkerWaits    atomic.Uint64 // batches that waited for one of Options.Workers
	ReaderWaits    atomic.Uint64 // engine connection reads whose reader then waited for one
	Oversized      atomic.Uint64 // peers' connections dropped for a message over Options.MaxMessageBytes

	events    [AllBlocksCleared + 1]atomic.Uint64
	malformed [numReasons]atomic.Uint64

	mu      sync.Mutex
	sources map[sourceKey]*SourceStats
}

// SourceStats are one stream's counters.
type SourceStats struct {
	Source    Source
	Connected atomic.Bool
	HaveSeq   atomic.Bool
	LastSeq   atomic.Uint64 // the last seq delivered
	LagNanos  atomic.Int64  // receive time minus the batch's engine timestamp
	Batches   atomic.Uint64
	Malformed atomic.Uint64
}

// Lag is how far behind the engine the last batch arrived.
func (s *SourceStats) Lag() time.Duration { return time.Duration(s.LagNanos.Load()) }

// Events returns how many events of kind k were delivered.
func (s *Stats) Events(k Kind) uint64 {
	if int(k) >= len(s.events) {
		return 0
	}
	return s.events[k].Load()
}

// Malformed returns how many messages (or events, for ReasonUnknownTag)
// were skipped for reason r.
func (s *Stats) Malformed(r MalformedReason) uint64 {
	if r >= numReasons {
		return 0
	}
	return s.malformed[r].Load()
}

// MalformedTotal sums Malformed over every reason.
func (s *Stats) MalformedTotal() uint64 {
	var n uint64
	for i := range s.malformed {
		n += s.malformed[i].Load()
	}
	return n
}

func (s *Stats) countMalformed(r MalformedReason) {
	if r < numReasons {
		s.malformed[r].Add(1)
	}
}

// Source returns the counters of src, nil if it is not subscribed.
func (s *Stats) Source(src Source) *SourceStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sources[keyOf(src)]
}

// Sources returns every subscribed stream's counters, in a stable order.
func (s *Stats) Sources() []*SourceStats {
	s.mu.Lock()
	out := make([]*SourceStats, 0, len(s.sources))
	for _, ss := range s.sources {
		out = append(out, ss)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return keyOf(out[i].Source).less(keyOf(out[j].Source)) })
	return out
}

func (s *Stats) addSource(src Source) *SourceStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sources == nil {
		s.sources = make(map[sourceKey]*SourceStats)
	}
	ss := &SourceStats{Source: src}
	s.sources[keyOf(src)] = ss
	return ss
}

// removeSource drops ss, unless src was subscribed again meanwhile (then
// the entry is the new stream's).
func (s *Stats) removeSource(src Source, ss *SourceStats) {
	s.mu.Lock()
	if s.sources[keyOf(src)] == ss {
		delete(s.sources, keyOf(src))
	}
	s.mu.Unlock()
}

// sourceKey identifies a stream: one rank of one worker of one model.
type sourceKey struct {
	model    string
	workerID uint64
	dpRank   uint32
}

func keyOf(src Source) sourceKey { return sourceKey{src.Model, src.WorkerID, src.DPRank} }

func (k sourceKey) less(o sourceKey) bool {
	if k.model != o.model {
		return k.model < o.model
	}
	if k.workerID != o.workerID {
		return k.workerID < o.workerID
	}
	return k.dpRank < o.dpRank
}
