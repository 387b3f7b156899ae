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
)

type itemKind uint8

const (
	itemMessage      itemKind = iota // a live message's frames
	itemConnected                    // the SUB socket connected
	itemDisconnected                 // ... lost its connection
	itemReplay                       // RequestReplay(from)
	itemResume                       // replay from the snapshot's seq, at start
)

// item is one thing a stream's goroutine handles, in arrival order.
type item struct {
	kind   itemKind
	frames [][]byte
	err    error
	from   uint64
}

var errStopped = errors.New("ingest: stream stopped")

// stream is one Source: its queue, its seq state and the one goroutine
// that calls the Handler for it (so calls for one Source never overlap).
type stream struct {
	sub      *Subscriber
	src      Source
	replayEP string
	stats    *SourceStats
	log      *slog.Logger
	inbox    chan item
	dec      *Decoder
	// queued is the bytes of the messages in inbox or being handled
	// (Options.QueueBytes); room is signalled when it goes down.
	queued atomic.Int64
	room   chan struct{}

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// The seq state: only the stream's goroutine touches it.
	have     bool   // a batch was delivered: last is meaningful
	last     uint64 // the last seq delivered
	haveLive bool
	lastLive uint64  // the last seq received live (seqs of one process only grow)
	resume   *uint64 // the first seq expected after a restored snapshot
	fromZero bool    // after a restart: the new process counts from 0
	topic    string  // the last live topic (3-frame replay replies carry none)
	caughtUp bool    // catchUp delivered and no live message came since
}

func (s *Subscriber) newStream(src Source, replayEP string) *stream {
	ctx, cancel := context.WithCancel(s.ctx)
	st := &stream{
		sub: s, src: src, replayEP: replayEP,
		stats: s.stats.addSource(src),
		log: s.opts.Logger.With("model", src.Model, "worker_id", src.WorkerID,
			"dp_rank", src.DPRank, "endpoint", src.Endpoint),
		inbox: make(chan item, s.opts.QueueLen),
		room:  make(chan struct{}, 1),
		dec:   NewDecoder(),
		ctx:   ctx, cancel: cancel,
		topic: src.Topic,
	}
	return st
}

func (st *stream) resumeFrom(seq uint64) {
	st.resume = &seq
	if st.replayEP != "" {
		st.inbox <- item{kind: itemResume} // the queue is empty: never blocks
	}
}

// start runs the stream's goroutine; add more goroutines (a receiver)
// with st.wg before calling stop.
func (st *stream) start() {
	st.wg.Add(1)
	go st.run()
}

func (st *stream) stop() {
	st.cancel()
	st.wg.Wait()
}

// enqueue hands an item to the stream's goroutine. A full queue makes the
// receiver wait (counted), never drop: the wait backs up into the socket,
// and from there into the engine's PUB high-water mark. link is the
// receiver's Link to its socket's readers (nil for none): they give back
// their gate tokens while it waits, since the stream's goroutine may need
// one to make room.
func (st *stream) enqueue(it item, link *cpugate.Link) error {
	if it.kind == itemMessage {
		if err := st.reserve(it.size(), link); err != nil {
			return err
		}
	}
	select {
	case st.inbox <- it:
		return nil
	default:
	}
	st.sub.stats.QueueWaits.Add(1)
	defer link.Wait()()
	select {
	case st.inbox <- it:
		return nil
	case <-st.ctx.Done():
		return errStopped
	}
}

// reserve counts n more bytes queued, waiting (counted, like a full
// queue) while the queue holds other messages and n would take it past
// the source's share of the budget (Subscriber.queueShare).
func (st *stream) reserve(n int64, link *cpugate.Link) error {
	waited := false
	for {
		q := st.queued.Load()
		if q == 0 || q+n <= st.sub.queueShare.Load() {
			if st.queued.CompareAndSwap(q, q+n) {
				return nil
			}
			continue
		}
		if !waited {
			waited = true
			st.sub.stats.QueueWaits.Add(1)
			defer link.Wait()()
		}
		select {
		case <-st.room:
		case <-st.ctx.Done():
			return errStopped
		}
	}
}

func (it *item) size() int64 {
	n := 0
	for _, f := range it.frames {
		n += len(f)
	}
	return int64(n)
}

func (st *stream) run() {
	defer st.wg.Done()
	for {
		select {
		case <-st.ctx.Done():
			return
		case it := <-st.inbox:
			st.handle(it)
			if it.kind == itemMessage {
				// Handled: its frames are garbage now.
				st.queued.Add(-it.size())
				select {
				case st.room <- struct{}{}:
				default:
				}
			}
		}
	}
}

func (st *stream) handle(it item) {
	switch it.kind {
	case itemMessage:
		st.onLive(it.frames)
	case itemConnected:
		st.sub.stats.Connects.Add(1)
		st.stats.Connected.Store(true)
		st.log.Info("kv event stream connected")
		st.emit(StreamEvent{Kind: StreamConnected})
		st.catchUp()
	case itemDisconnected:
		st.sub.stats.Disconnects.Add(1)
		st.stats.Connected.Store(false)
		st.log.Warn("kv event stream disconnected; reconnecting", "error", errString(it.err))
		st.emit(StreamEvent{Kind: StreamDisconnected, Err: it.err})
	case itemReplay:
		st.onDemandReplay(it.from)
	case itemResume:
		st.resumeReplay()
	}
}

// onLive tracks the seq of a live message: restarts, duplicates of what a
// replay delivered, gaps (replayed or lost), then delivers it.
func (st *stream) onLive(frames [][]byte) {
	st.sub.stats.Messages.Add(1)
	m, err := parseLive(frames)
	if err != nil {
		st.malformed(err)
		return
	}
	st.topic = m.topic
	switch {
	case st.haveLive && m.seq <= st.lastLive,
		// Seq 0 after anything was delivered is a new process; a
		// duplicate seq 0 (a replay from 0 raced it) costs one clear.
		m.seq == 0 && st.have && !st.caughtUp,
		// Below a restored snapshot's seq: the engine restarted since.
		!st.have && st.resume != nil && m.seq < *st.resume:
		st.restarted(m.seq)
	}
	st.haveLive, st.lastLive, st.caughtUp = true, m.seq, false
	if next, ok := st.expected(); ok {
		if m.seq < next {
			st.sub.stats.Duplicates.Add(1)
			return
		}
		if m.seq > next {
			st.gap(next, m.seq)
			if st.have && m.seq <= st.last {
				st.sub.stats.Duplicates.Add(1)
				return
			}
		}
	}
	st.deliver(m.topic, m.seq, m.payload)
}

// expected is the next seq the stream must see; ok is false before the
// first message of a fresh stream (which sets the seq).
func (st *stream) expected() (uint64, bool) {
	switch {
	case st.have:
		return st.last + 1, true
	case st.resume != nil:
		return *st.resume, true
	case st.fromZero:
		return 0, true
	}
	return 0, false
}

func (st *stream) restarted(seq uint64) {
	st.sub.stats.Restarts.Add(1)
	st.log.Info("engine restarted: its seq went back", "seq", seq, "last_seq", st.last)
	st.emit(StreamEvent{Kind: StreamRestarted})
	st.have, st.resume, st.fromZero = false, nil, true
	st.stats.HaveSeq.Store(false)
}

// deliver decodes one batch and hands it to the Handler. A payload that
// does not decode is reported twice: StreamMalformed (why) and
// StreamGapLost for its seq (the events in it are gone for good).
func (st *stream) deliver(topic string, seq uint64, payload []byte) {
	if !st.have || seq > st.last {
		st.last = seq
	}
	st.have, st.resume, st.fromZero = true, nil, false
	st.stats.HaveSeq.Store(true)
	st.stats.LastSeq.Store(st.last)

	if !st.takeWorker() {
		return // stopped: the batch is not ours to apply any more
	}
	defer st.releaseWorker()
	b, unknown, err := st.decode(topic, seq, payload)
	if err != nil {
		st.malformed(err)
		st.lost(seq, seq+1, fmt.Errorf("batch seq %d could not be decoded: %w", seq, err))
		return
	}
	if unknown > 0 {
		st.sub.stats.UnknownEvents.Add(uint64(unknown))
		st.malformed(&DecodeError{Reason: ReasonUnknownTag,
			Err: fmt.Errorf("batch seq %d: %d events of an unknown kind left out", seq, unknown)})
	}
	for i := range b.Events {
		st.sub.stats.events[b.Events[i].Kind].Add(1)
	}
	if b.Timestamp > 0 {
		lag := time.Since(time.Unix(0, int64(b.Timestamp*1e9)))
		st.stats.LagNanos.Store(int64(lag))
	}
	st.sub.stats.Batches.Add(1)
	st.stats.Batches.Add(1)
	st.callBatch(b)
}

// takeWorker waits for one of the Subscriber's Options.Workers tokens
// (none to wait for when unbounded); false when the stream stops
// meanwhile.
func (st *stream) takeWorker() bool {
	g := st.sub.gate
	if g == nil || g.TryAcquire() {
		return true
	}
	st.sub.stats.WorkerWaits.Add(1)
	return g.Acquire(st.ctx.Done())
}

func (st *stream) releaseWorker() {
	if st.sub.gate != nil {
		st.sub.gate.Release()
	}
}

// decode never panics: a decoder panic (a bug) is a malformed message.
func (st *stream) decode(topic string, seq uint64, payload []byte) (b *Batch, unknown int, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, unknown = nil, 0
			err = &DecodeError{Reason: ReasonPanic, Err: fmt.Errorf("decoder panic: %v", r)}
			st.dec = NewDecoder() // its state is unknown now
		}
	}()
	return st.dec.DecodeBatch(topic, seq, payload)
}

func (st *stream) malformed(err error) {
	reason := ReasonOf(err)
	st.sub.stats.countMalformed(reason)
	st.stats.Malformed.Add(1)
	st.log.Warn("malformed kv event message skipped", "reason", reason.String(), "error", err.Error())
	st.emit(StreamEvent{Kind: StreamMalformed, Err: err})
}

func (st *stream) lost(from, to uint64, err error) {
	st.sub.stats.GapsLost.Add(1)
	st.log.Warn("kv events lost", "from_seq", from, "to_seq", to, "error", errString(err))
	st.emit(StreamEvent{Kind: StreamGapLost, From: from, To: to, Err: err})
}

func (st *stream) emit(ev StreamEvent) {
	if st.ctx.Err() != nil {
		return // unsubscribed: a replay cut short by it is no news
	}
	defer st.recoverHandler("HandleStream")
	st.sub.opts.Handler.HandleStream(st.src, ev)
}

func (st *stream) callBatch(b *Batch) {
	defer st.recoverHandler("HandleBatch")
	st.sub.opts.Handler.HandleBatch(st.src, b)
}

// recoverHandler keeps a panicking Handler from killing the stream: the
// panic is counted and logged, and the stream goes on.
func (st *stream) recoverHandler(call string) {
	if r := recover(); r != nil {
		st.sub.stats.HandlerPanics.Add(1)
		st.log.Error("kv event handler panicked; the stream goes on", "call", call, "panic", fmt.Sprint(r))
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
