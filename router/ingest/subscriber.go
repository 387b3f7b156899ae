package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvhash/kvhash/router/internal/cpugate"
	"github.com/kvhash/kvhash/router/zmqcap"
)

// Options configure a Subscriber. Zero values take the defaults.
type Options struct {
	Handler Handler
	Logger  *slog.Logger

	// ReplayTimeout bounds one replay request, from dialling the engine's
	// replay endpoint to its end marker (default 5 s).
	ReplayTimeout time.Duration
	// ReconnectMin and ReconnectMax bound the backoff between attempts to
	// reach an engine that is down (defaults 100 ms and 5 s).
	ReconnectMin, ReconnectMax time.Duration
	// QueueLen is each source's queue of received messages waiting for the
	// Handler (default 1024). See the package doc on queueing.
	QueueLen int
	// QueueBytes bounds the bytes of those messages (default 2 MiB): a
	// burst of long prompts would otherwise queue QueueLen of them per
	// source, hundreds of megabytes across tens of engines. A message
	// larger than it is queued alone.
	QueueBytes int
	// QueueBudget bounds all sources' queued bytes together (default 8
	// MiB): each source's bound is QueueBudget shared among the sources,
	// between 256 KiB and QueueBytes, so that four engines keep 2 MiB
	// queues and 32 keep 256 KiB ones. Each source still has a queue of
	// its own (a slow one fills only its own). In a 32-engine burst the
	// 2 MiB queues were a quarter of kvrouter's peak RSS (266 MiB against
	// 198 MiB shared, at the same ingest rate;
	// docs/guides/indexer-benchmark.md).
	QueueBudget int
	// MaxReplayBatches caps how many batches one replay may return (the
	// engine's buffer_steps; default 100,000): a bound on memory.
	MaxReplayBatches int
	// MaxMessageBytes caps one ZeroMQ message from any peer, its frames'
	// bodies plus zmqcap.FrameOverhead a frame (default
	// DefaultMaxMessageBytes; zmqcap.MinLimit..zmqcap.MaxLimit). A peer
	// that sends more has its connection dropped before the message is
	// read; the socket serves the others (Stats.Oversized).
	MaxMessageBytes int64
	// Workers, when above 0, bounds how many of the ingest's goroutines
	// work at once (default 0: unbounded): Sources decoding and handing
	// a batch to the Handler, and engine connections' readers between two
	// reads (see router/internal/cpugate). Unbounded, a burst over many
	// engines makes dozens of ingest goroutines runnable at once and keeps
	// every P busy; Go's scheduler notices a ready socket (a query) only
	// when sysmon polls (~10 ms), then runs it behind them. Any bound ends
	// that herd; fewer Workers than GOMAXPROCS also leave a P to the
	// queries and the collector. On 2 cores, 2 Workers made a burst's
	// longest query 2-8x shorter and a 32-engine burst's peak RSS 0.6x,
	// for 0.72-0.94x the burst ingest (docs/guides/indexer-benchmark.md).
	Workers int
}

func (o *Options) setDefaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ReplayTimeout <= 0 {
		o.ReplayTimeout = 5 * time.Second
	}
	if o.ReconnectMin <= 0 {
		o.ReconnectMin = 100 * time.Millisecond
	}
	if o.ReconnectMax < o.ReconnectMin {
		o.ReconnectMax = max(5*time.Second, o.ReconnectMin)
	}
	if o.QueueLen <= 0 {
		o.QueueLen = 1024
	}
	if o.QueueBytes <= 0 {
		o.QueueBytes = 2 << 20
	}
	if o.QueueBudget <= 0 {
		o.QueueBudget = 8 << 20
	}
	if o.MaxReplayBatches <= 0 {
		o.MaxReplayBatches = 100_000
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
}

// Subscription is one engine to subscribe to: one SUB socket per
// data-parallel rank, rank r at the endpoint's port + r (its replay
// endpoint offset the same way).
type Subscription struct {
	Model          string
	WorkerID       uint64
	Endpoint       string // the engine's PUB endpoint, e.g. tcp://10.0.0.5:5557
	ReplayEndpoint string // its ROUTER replay endpoint; "" = none
	DPSize         int    // ranks 0..DPSize-1; 0 counts as 1
	Topic          string // topic prefix to subscribe to ("" = every topic)
	// ResumeAfter gives, per rank, the last seq the router already holds
	// (a restored snapshot): the stream starts by asking the engine to
	// replay from the seq after it.
	ResumeAfter map[uint32]uint64
}

// Subscriber receives engines' KV event streams over ZeroMQ and hands
// each stream's batches, in seq order, to the Handler. It never stops on
// bad input: see the package doc.
type Subscriber struct {
	opts  Options
	stats Stats

	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	streams map[sourceKey]*stream
	// queueShare is each source's bound on its queued bytes
	// (Options.QueueBudget over the sources).
	queueShare atomic.Int64
	bound      *boundEndpoint
	closed     bool

	zcap *zmqcap.Cap // every socket's cap on a peer's message
	// gate holds a token for each batch being decoded and handled and
	// each engine connection's reader at work (Options.Workers); nil:
	// unbounded.
	gate      *cpugate.Gate
	oversized oversizedLog
}

// New returns a Subscriber; it subscribes to nothing until Subscribe or
// Bind.
func New(opts Options) (*Subscriber, error) {
	if opts.Handler == nil {
		return nil, errors.New("ingest: Options.Handler is nil")
	}
	opts.setDefaults()
	s := &Subscriber{opts: opts, streams: make(map[sourceKey]*stream)}
	if opts.Workers > 0 {
		gate, err := cpugate.New(opts.Workers)
		if err != nil {
			return nil, fmt.Errorf("ingest: Options.Workers: %w", err)
		}
		s.gate = gate
	}
	zcap, err := zmqcap.New(opts.MaxMessageBytes, s.onOversized)
	if err != nil {
		return nil, fmt.Errorf("ingest: Options.MaxMessageBytes: %w", err)
	}
	s.zcap = zcap
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// countReaderWait counts an engine connection's reader waiting for a
// gate token (Stats.ReaderWaits).
func (s *Subscriber) countReaderWait() { s.stats.ReaderWaits.Add(1) }

// Stats returns the live counters.
func (s *Subscriber) Stats() *Stats { return &s.stats }

// Subscribe starts one stream per rank of sub and returns their Sources.
// Subscribing a (model, worker, rank) that is already subscribed is an
// error: Unsubscribe it first.
func (s *Subscriber) Subscribe(sub Subscription) ([]Source, error) {
	if sub.Endpoint == "" {
		return nil, fmt.Errorf("ingest: subscribe worker %d: no endpoint", sub.WorkerID)
	}
	ranks := max(sub.DPSize, 1)
	type planned struct {
		src    Source
		replay string
	}
	plan := make([]planned, 0, ranks)
	for r := range uint32(ranks) {
		ep, err := RankEndpoint(sub.Endpoint, r)
		if err != nil {
			return nil, fmt.Errorf("ingest: subscribe worker %d: %w", sub.WorkerID, err)
		}
		replay, err := RankEndpoint(sub.ReplayEndpoint, r)
		if err != nil {
			return nil, fmt.Errorf("ingest: subscribe worker %d replay: %w", sub.WorkerID, err)
		}
		plan = append(plan, planned{Source{Model: sub.Model, WorkerID: sub.WorkerID, DPRank: r, Endpoint: ep, Topic: sub.Topic}, replay})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("ingest: subscriber closed")
	}
	for _, p := range plan {
		if _, dup := s.streams[keyOf(p.src)]; dup {
			return nil, fmt.Errorf("ingest: model %q worker %d rank %d is already subscribed", p.src.Model, p.src.WorkerID, p.src.DPRank)
		}
	}
	out := make([]Source, 0, len(plan))
	for _, p := range plan {
		st := s.newStream(p.src, p.replay)
		if after, ok := sub.ResumeAfter[p.src.DPRank]; ok {
			st.resumeFrom(after + 1)
		}
		s.streams[keyOf(p.src)] = st
		s.shareQueuesLocked()
		st.start()
		st.wg.Add(1)
		go s.dialLoop(st)
		out = append(out, p.src)
	}
	return out, nil
}

// Unsubscribe stops every rank of (model, worker) and waits for their
// goroutines; it returns how many streams it stopped.
func (s *Subscriber) Unsubscribe(model string, workerID uint64) int {
	s.mu.Lock()
	var stopped []*stream
	for k, st := range s.streams {
		if k.model == model && k.workerID == workerID {
			stopped = append(stopped, st)
			delete(s.streams, k)
		}
	}
	s.shareQueuesLocked()
	s.mu.Unlock()
	for _, st := range stopped {
		st.stop()
		s.stats.removeSource(st.src, st.stats)
	}
	return len(stopped)
}

// RequestReplay asks src's engine to replay every batch it still holds
// from seq from on, and delivers them through the Handler (after the
// batches already queued), even those delivered before: the indexer uses
// it to get a quarantined worker's blocks back. It returns once the
// request is queued; the outcome arrives as StreamGapReplayed (or
// StreamGapLost for what the engine no longer holds).
func (s *Subscriber) RequestReplay(src Source, from uint64) error {
	s.mu.Lock()
	st := s.streams[keyOf(src)]
	s.mu.Unlock()
	if st == nil {
		return fmt.Errorf("ingest: replay for model %q worker %d rank %d: not subscribed", src.Model, src.WorkerID, src.DPRank)
	}
	if st.replayEP == "" {
		return fmt.Errorf("ingest: replay for model %q worker %d rank %d: no replay endpoint", src.Model, src.WorkerID, src.DPRank)
	}
	return st.enqueue(item{kind: itemReplay, from: from}, nil)
}

// Sources lists the subscribed streams (the bound endpoint's included).
func (s *Subscriber) Sources() []Source {
	out := []Source{}
	for _, ss := range s.stats.Sources() {
		out = append(out, ss.Source)
	}
	return out
}

// Close stops every stream and the bound endpoint, and waits for them.
func (s *Subscriber) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	streams := s.streams
	s.streams = map[sourceKey]*stream{}
	bound := s.bound
	s.mu.Unlock()
	s.cancel()
	if bound != nil {
		bound.wait()
	}
	for _, st := range streams {
		st.stop()
	}
	s.zcap.Close()
	return nil
}

// sleep waits d or until ctx ends; false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// minQueueShare is the least QueueBudget leaves a source (QueueBytes
// permitting): a 37.5 KiB batch of 512 blocks a few times over.
const minQueueShare = 256 << 10

// shareQueuesLocked sets each source's queue bound (Options.QueueBudget
// shared among the sources), as sources come and go.
func (s *Subscriber) shareQueuesLocked() {
	share := s.opts.QueueBudget / max(1, len(s.streams))
	s.queueShare.Store(int64(min(s.opts.QueueBytes, max(minQueueShare, share))))
}

// linked returns ctx for a new socket and, with a gate, the Link its
// connections' readers take their tokens through (cpugate), which the
// capped transport finds in the socket's context; nil without a gate.
func (s *Subscriber) linked(ctx context.Context) (context.Context, *cpugate.Link) {
	if s.gate == nil {
		return ctx, nil
	}
	link := s.gate.NewLink(s.countReaderWait)
	return cpugate.WithLink(ctx, link), link
}
