package eventplane

import (
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvhash/kvhash/router/ingest"
)

// seqKey names one engine stream: a worker's stream rank (its Source's
// DPRank). Worker ids are unique in the fleet, whatever the model.
type seqKey struct {
	worker uint64
	rank   uint32
}

// seqState is the last engine seq applied from one stream; have is false
// before any, and after a restart (the new process counts from 0).
type seqState struct {
	have bool
	last uint64
}

// startConsumer reads the whole stream, in order, from the sequence after
// the restored snapshot, with an ordered consumer (JetStream recreates it
// after a disconnection, from the last sequence delivered). Call it with
// applyMu held (or before the plane runs); the consumer it replaces must
// be stopped first.
func (p *Plane) startConsumer() error {
	gen := p.consumerGen
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: p.eventFilters()}
	if p.applied > 0 {
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = p.applied + 1
	}
	cons, err := p.js.OrderedConsumer(p.ctx, p.opts.streamName(), cfg)
	if err != nil {
		return fmt.Errorf("eventplane: ordered consumer: %w", err)
	}
	cc, err := cons.Consume(func(msg jetstream.Msg) { p.applyMsg(gen, msg) }, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		p.log.Debug("kvrouter: event stream consumer", "error", err.Error())
	}))
	if err != nil {
		return fmt.Errorf("eventplane: consume: %w", err)
	}
	p.consumeCtx = cc
	return nil
}

// applyMsg applies one stream message to the local indexer (the
// consumer calls it for one message at a time, in stream order). A
// message of a consumer since replaced (gen) is ignored: it belongs to a
// stream position the replica dropped.
func (p *Plane) applyMsg(gen uint64, msg jetstream.Msg) {
	md, err := msg.Metadata()
	if err != nil {
		p.stats.Malformed.Add(1)
		p.log.Warn("kvrouter: event stream message without metadata skipped", "error", err.Error())
		return
	}
	m, derr := Decode(msg.Data())
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	if gen != p.consumerGen || md.Sequence.Stream <= p.applied {
		return // delivered again after a consumer reset
	}
	p.applied = md.Sequence.Stream
	p.appliedSeq.Store(p.applied)
	if derr != nil {
		p.stats.Malformed.Add(1)
		p.log.Warn("kvrouter: event stream message skipped", "stream_seq", md.Sequence.Stream, "subject", msg.Subject(), "error", derr.Error())
		return
	}
	p.applyLocked(m)
}

// applyLocked hands one message to the indexer unless its engine seq was
// applied already (a new holder's replay overlapping the old holder's
// last batches): once per replica, never twice.
func (p *Plane) applyLocked(m Message) {
	k := seqKey{m.Source.WorkerID, m.Source.DPRank}
	st := p.seqs[k]
	switch {
	case m.Batch != nil:
		if st.have && m.Batch.Seq <= st.last {
			p.stats.Duplicates.Add(1)
			return
		}
		p.seqs[k] = seqState{have: true, last: m.Batch.Seq}
	case m.Stream.Kind == ingest.StreamGapLost:
		if st.have && m.Stream.To <= st.last+1 {
			p.stats.Duplicates.Add(1)
			return // every seq of the gap was applied after all
		}
		p.seqs[k] = seqState{have: true, last: max(st.last, m.Stream.To-1)}
	case m.Stream.Kind == ingest.StreamRestarted:
		p.seqs[k] = seqState{}
		p.rebuilt(m.Source.WorkerID) // a rebuild's marker (reset.go), or the engine restarted: exact either way
	}
	p.stats.Applied.Add(1)
	defer func() {
		if r := recover(); r != nil {
			p.stats.HandlerPanics.Add(1)
			p.log.Error("kvrouter: indexer panicked applying an event-plane message; going on", "panic", fmt.Sprint(r))
		}
	}()
	if m.Batch != nil {
		p.ix.HandleBatch(m.Source, m.Batch)
	} else {
		p.ix.HandleStream(m.Source, *m.Stream)
	}
	if f := p.afterApply.Load(); f != nil {
		(*f)(m)
	}
}

// resumeAfter is, per stream rank of a worker, the last seq applied: where
// a new holder asks the engine to replay from.
func (p *Plane) resumeAfter(worker uint64) map[uint32]uint64 {
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	var out map[uint32]uint64
	for k, st := range p.seqs {
		if k.worker == worker && st.have {
			if out == nil {
				out = map[uint32]uint64{}
			}
			out[k.rank] = st.last
		}
	}
	return out
}
