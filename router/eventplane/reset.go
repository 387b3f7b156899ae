package eventplane

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvhash/kvhash/router/ingest"
)

// A stream position means something only in the stream it was read
// from. When NATS loses its JetStream store (a lost disk, a replaced
// server) the stream comes back empty, recreated by whichever replica
// notices first, and its sequences start over below what every replica
// applied: a replica that kept its position would skip every new message
// while saying it is caught up. So each replica checks the stream's
// identity (its creation time) and sequence on every readiness tick, and
// on a change it
//
//   - recreates whatever of the stream and buckets is missing;
//   - drops its stream position and de-duplication state, and consumes the
//     new stream from its start;
//   - has each engine rebuilt from the engine itself: the engine's lease
//     holder publishes a restart marker per rank (every replica clears the
//     rank when it applies it, as after an engine restart) and then asks
//     the engine to replay everything it still holds, from seq 0;
//   - says not ready until it has applied every such marker for the
//     engines it knows and caught up.

// checkStream returns the stream's state after recreating a missing
// stream and resynchronizing from a new one; resynced reports the latter.
func (p *Plane) checkStream(ctx context.Context) (info *jetstream.StreamInfo, resynced bool, err error) {
	applied := p.appliedSeq.Load() // before the info: the stream only grows meanwhile
	info, err = p.stream.Info(ctx)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		created, cerr := p.ensureStore(ctx)
		if cerr != nil {
			return nil, false, cerr
		}
		p.log.Warn("kvrouter: the event stream was missing (did NATS lose its JetStream store?); recreated it", "created", created)
		info, err = p.stream.Info(ctx)
	}
	if err != nil {
		return nil, false, err
	}
	why := ""
	switch {
	case info.Created.UnixNano() != p.epoch.Load():
		why = "the event stream was recreated (did NATS lose its JetStream store?)"
	case info.State.LastSeq < applied:
		why = fmt.Sprintf("the event stream's sequence went back from %d to %d", applied, info.State.LastSeq)
	}
	if why == "" {
		return info, false, nil
	}
	if created, err := p.ensureStore(ctx); err != nil {
		return nil, false, err
	} else if len(created) > 0 {
		p.log.Warn("kvrouter: event plane buckets were missing; recreated them", "created", created)
	}
	if err := p.resync(info, why); err != nil {
		return nil, false, err
	}
	return info, true, nil
}

// resync drops the replica's stream position and consumes info's stream
// from its start; every engine it knows is to be rebuilt from the engine.
func (p *Plane) resync(info *jetstream.StreamInfo, why string) error {
	p.setNotReady("rebuilding: " + why)
	p.stats.Resyncs.Add(1)
	p.log.Warn("kvrouter: "+why+"; dropping the stream position and rebuilding every engine from the engines",
		"applied_stream_seq", p.appliedSeq.Load(), "stream_last_seq", info.State.LastSeq)
	// The flags first: a marker on the new stream, applied by the new
	// consumer, must find them set.
	leases := p.leaseList()
	for _, l := range leases {
		l.rebuild.Store(true)
	}
	p.applyMu.Lock()
	if p.consumeCtx != nil {
		p.consumeCtx.Stop()
	}
	p.consumerGen++
	p.applied, p.lastSnapSeq = 0, 0
	p.appliedSeq.Store(0)
	p.seqs = map[seqKey]seqState{}
	p.epoch.Store(info.Created.UnixNano())
	err := p.startConsumer()
	p.applyMu.Unlock()
	if err != nil {
		p.epoch.Store(0) // the next tick tries again
		return err
	}
	// The holders' tend stops each engine's subscription and starts it
	// again from seq 0 after the markers (lease.go): not here, where a
	// tend in progress would be undone.
	p.kickLeases()
	return nil
}

// rebuilt notes that an engine's restart marker was applied: its ranks
// start over from what follows on the stream.
func (p *Plane) rebuilt(worker uint64) {
	p.leaseMu.Lock()
	l := p.leases[worker]
	p.leaseMu.Unlock()
	if l != nil {
		l.rebuild.Store(false)
	}
}

// rebuildsPending counts the engines still waiting for their restart
// marker after a resync.
func (p *Plane) rebuildsPending() int {
	n := 0
	for _, l := range p.leaseList() {
		if l.rebuild.Load() {
			n++
		}
	}
	return n
}

// publishRebuildMarkers puts a restart marker per rank of the holder's
// engine on the stream, once, without retrying (tend tries again on the
// next tick): every replica clears the ranks when it applies them.
func (p *Plane) publishRebuildMarkers(ctx context.Context, sub ingest.Subscription, nonce int64) error {
	for r := range uint32(max(sub.DPSize, 1)) {
		ep, err := ingest.RankEndpoint(sub.Endpoint, r)
		if err != nil {
			return err
		}
		src := ingest.Source{Model: sub.Model, WorkerID: sub.WorkerID, DPRank: r, Endpoint: ep, Topic: sub.Topic}
		data, err := EncodeStream(src, ingest.StreamEvent{Kind: ingest.StreamRestarted})
		if err != nil {
			return err
		}
		id := rebuildMsgID(src, p.epoch.Load(), nonce)
		if _, err := p.js.Publish(ctx, eventSubject(p.opts.Prefix, src), data, jetstream.WithMsgID(id)); err != nil {
			return fmt.Errorf("eventplane: rebuild marker of worker %d rank %d: %w", sub.WorkerID, r, err)
		}
		p.stats.Published.Add(1)
	}
	return nil
}

// replayAll resumes every rank of an engine from seq 0: the engine
// replays everything it still holds (a seq it no longer holds is a lost
// gap, as on one router).
func replayAll(dpSize int) map[uint32]uint64 {
	out := map[uint32]uint64{}
	for r := range uint32(max(dpSize, 1)) {
		out[r] = math.MaxUint64 // ingest resumes from the seq after it: 0
	}
	return out
}
