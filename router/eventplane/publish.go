package eventplane

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvhash/kvhash/router/ingest"
)

// publisher is the Handler of the holder's ZeroMQ subscriber: it puts
// each batch and stream event on the stream instead of applying it (the
// holder applies it from the stream, as every replica does).
type publisher struct{ p *Plane }

var _ ingest.Handler = (*publisher)(nil)

func (pb *publisher) HandleBatch(src ingest.Source, b *ingest.Batch) {
	if b == nil {
		return
	}
	data, err := EncodeBatch(src, b)
	if err != nil {
		pb.p.log.Error("kvrouter: a batch could not be encoded for the event plane", "worker_id", src.WorkerID, "seq", b.Seq, "error", err.Error())
		return
	}
	if limit := pb.p.nc.MaxPayload(); int64(len(data)) > limit {
		// Never retried: it would block the engine's stream for good. The
		// batch is reported lost instead, so every replica clears the rank
		// and rebuilds it from the events that follow (as after any lost
		// gap); raise the server's max_payload to keep such batches.
		pb.p.log.Error("kvrouter: a batch is larger than NATS's max_payload; it is reported lost", "worker_id", src.WorkerID,
			"seq", b.Seq, "bytes", len(data), "max_payload", limit, "fix", "raise max_payload in the NATS server's config (e.g. 8MB)")
		pb.p.stats.Oversized.Add(1)
		pb.HandleStream(src, ingest.StreamEvent{Kind: ingest.StreamGapLost, From: b.Seq, To: b.Seq + 1,
			Err: fmt.Errorf("batch seq %d: %d bytes, over NATS's max_payload of %d", b.Seq, len(data), limit)})
		return
	}
	if pb.p.publish(src, data, batchMsgID(src, b)) {
		pb.p.pubMu.Lock()
		pb.p.pubLast[seqKey{src.WorkerID, src.DPRank}] = b.Seq
		pb.p.pubMu.Unlock()
	}
}

func (pb *publisher) HandleStream(src ingest.Source, ev ingest.StreamEvent) {
	data, err := EncodeStream(src, ev)
	if err != nil {
		pb.p.log.Error("kvrouter: a stream event could not be encoded for the event plane", "worker_id", src.WorkerID, "error", err.Error())
		return
	}
	id := ""
	if ev.Kind == ingest.StreamGapLost || ev.Kind == ingest.StreamRestarted {
		pb.p.pubMu.Lock()
		after := pb.p.pubLast[seqKey{src.WorkerID, src.DPRank}]
		pb.p.pubMu.Unlock()
		id = streamMsgID(src, ev, after)
	}
	pb.p.publish(src, data, id)
}

// publish puts one message on the stream and waits for JetStream's ack,
// retrying while NATS is unreachable: the subscriber's queue, then the
// engine's buffer, hold the rest meanwhile, and a gap the engine could
// not hold is replayed or reported lost by ingest. It gives up (false)
// when the replica no longer holds the engine's lease: the new holder
// replays from the last seq applied.
func (p *Plane) publish(src ingest.Source, data []byte, msgID string) bool {
	subject := eventSubject(p.opts.Prefix, src)
	backoff := 50 * time.Millisecond
	for attempt := 0; ; attempt++ {
		l := p.heldLease(src.WorkerID)
		var hold *scope
		if l != nil {
			hold = l.hold.Load()
		}
		if hold == nil || hold.Err() != nil {
			p.stats.Dropped.Add(1)
			return false
		}
		var opts []jetstream.PublishOpt
		if msgID != "" {
			// Scoped to the stream's incarnation and the engine's last
			// rebuild (reset.go, rebuild.go): the engine's replay from seq 0
			// must not be taken for the batches published before it.
			scope := strconv.FormatInt(p.epoch.Load(), 36) + "|" + strconv.FormatInt(l.nonce.Load(), 36) + "|"
			opts = append(opts, jetstream.WithMsgID(scope+msgID))
		}
		// Ends when the lease does: a holder cut off from NATS stops its
		// engines at once, not one blocked publish after another.
		ctx, cancel := context.WithTimeout(hold, 5*time.Second)
		_, err := p.js.Publish(ctx, subject, data, opts...)
		cancel()
		if err == nil {
			p.stats.Published.Add(1)
			return true
		}
		p.stats.PublishRetries.Add(1)
		if attempt%20 == 0 {
			p.log.Warn("kvrouter: publishing to the event plane failed; retrying", "worker_id", src.WorkerID,
				"subject", subject, "attempt", attempt+1, "error", err.Error())
		}
		select {
		case <-hold.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}
