package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"

	"github.com/go-zeromq/zmq4"
)

var errNoReplay = errors.New("no replay endpoint configured")

// fetchReplay asks the engine's replay endpoint (a ROUTER) for every batch
// it holds from seq from on: a DEALER sends ["", from as 8 bytes BE], the
// engine answers one message per batch and an end marker (both reply
// shapes: see parseReplayReply). Bounded by Options.ReplayTimeout.
//
// It runs on the stream's goroutine: live messages that arrive meanwhile
// wait in the stream's queue (and behind it in the socket) and are
// delivered after the replay, those the replay already delivered dropped
// by seq.
func (st *stream) fetchReplay(from uint64) ([]replayReply, error) {
	if st.replayEP == "" {
		return nil, errNoReplay
	}
	endpoint, err := st.sub.capped(st.replayEP)
	if err != nil {
		return nil, err
	}
	timeout := st.sub.opts.ReplayTimeout
	ctx, cancel := context.WithTimeout(st.ctx, timeout)
	defer cancel()
	dealer := zmq4.NewDealer(ctx, zmq4.WithDialerMaxRetries(0), zmq4.WithDialerTimeout(timeout),
		zmq4.WithLogger(slog.NewLogLogger(st.sub.opts.Logger.Handler(), slog.LevelDebug)))
	defer dealer.Close()
	if err := dealer.Dial(endpoint); err != nil {
		return nil, fmt.Errorf("replay endpoint %s: %w", st.replayEP, err)
	}
	if err := dealer.Send(zmq4.NewMsgFrom([]byte{}, seqBytes(from))); err != nil {
		return nil, fmt.Errorf("replay endpoint %s: sending the request: %w", st.replayEP, err)
	}
	var out []replayReply
	for {
		msg, err := dealer.Recv()
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("replay endpoint %s: no end marker within %v (%d batches received)", st.replayEP, timeout, len(out))
			}
			return nil, fmt.Errorf("replay endpoint %s: %w", st.replayEP, err)
		}
		st.sub.stats.Messages.Add(1)
		r, err := parseReplayReply(msg.Frames)
		if err != nil {
			st.malformed(err)
			return nil, fmt.Errorf("replay endpoint %s: %w", st.replayEP, err)
		}
		if r.end {
			break
		}
		if r.seq < from {
			continue // not asked for
		}
		if len(out) >= st.sub.opts.MaxReplayBatches {
			return nil, fmt.Errorf("replay endpoint %s: more than %d batches", st.replayEP, st.sub.opts.MaxReplayBatches)
		}
		if r.topic == "" {
			r.topic = st.topic
		}
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out, nil
}

// deliverRun delivers the replies whose seqs run on without a hole from
// the first one, and returns the seq after the last delivered.
func (st *stream) deliverRun(replies []replayReply) uint64 {
	next := replies[0].seq
	for _, r := range replies {
		if r.seq < next {
			continue // a duplicate reply
		}
		if r.seq != next {
			break
		}
		st.deliver(r.topic, r.seq, r.payload)
		next++
	}
	return next
}

// gap fills the seqs [from, to) missing before live seq to: from the
// replay endpoint when it still holds them all, else StreamGapLost.
func (st *stream) gap(from, to uint64) {
	st.sub.stats.Gaps.Add(1)
	st.log.Info("kv event gap: asking the engine to replay", "from_seq", from, "to_seq", to)
	replies, err := st.fetchReplay(from)
	if err == nil {
		switch {
		case len(replies) == 0:
			err = fmt.Errorf("the engine's replay buffer holds nothing from seq %d", from)
		case replies[0].seq != from:
			err = fmt.Errorf("the engine's replay buffer starts at seq %d, after %d", replies[0].seq, from)
		}
	}
	if err != nil {
		st.sub.stats.ReplaysFailed.Add(1)
		st.lost(from, to, err)
		st.skipTo(to)
		return
	}
	st.sub.stats.ReplaysOK.Add(1)
	next := st.deliverRun(replies)
	if next < to {
		st.lost(next, to, fmt.Errorf("the replay stopped at seq %d", next))
		st.skipTo(to)
		return
	}
	st.sub.stats.GapsReplayed.Add(1)
	st.emit(StreamEvent{Kind: StreamGapReplayed, From: from, To: to})
}

// skipTo makes seq to the next one expected, after a lost gap.
func (st *stream) skipTo(to uint64) {
	if to == 0 {
		return
	}
	st.have, st.last, st.resume, st.fromZero = true, to-1, nil, false
}

// resumeReplay runs first on a stream restored from a snapshot: it asks
// for every batch after the snapshot's seq. When the engine cannot answer
// (not up yet), the first live message decides instead.
func (st *stream) resumeReplay() {
	if st.resume == nil {
		return
	}
	from := *st.resume
	replies, err := st.fetchReplay(from)
	if err != nil {
		st.sub.stats.ReplaysFailed.Add(1)
		st.log.Info("resume replay failed; the next live message decides", "from_seq", from, "error", err.Error())
		return
	}
	st.sub.stats.ReplaysOK.Add(1)
	if len(replies) == 0 {
		return // nothing newer than the snapshot yet
	}
	first := replies[0].seq
	st.sub.stats.Gaps.Add(1)
	if first > from {
		st.lost(from, first, fmt.Errorf("the engine's replay buffer starts at seq %d, after the snapshot's %d", first, from-1))
	}
	next := st.deliverRun(replies)
	if first == from {
		st.sub.stats.GapsReplayed.Add(1)
		st.emit(StreamEvent{Kind: StreamGapReplayed, From: from, To: next})
	}
}

// catchUp runs once a fresh stream's SUB socket is connected: a PUB
// socket drops what it sent before a subscription reached it, so the
// batches the engine published before (from seq 0, or from the restored
// snapshot's seq) are asked of the replay endpoint at once, rather than
// when a later live message shows the gap (which may never come: an idle
// engine's cache would stay unknown). What the engine's buffer no longer
// holds of a fresh stream is not a loss to report: the router never had
// it. 3-frame replies carry no topic: before a live message names it,
// the subscription's topic stands in.
func (st *stream) catchUp() {
	if st.replayEP == "" || st.have {
		return // nothing to ask, or a reconnect: gaps are found live
	}
	if st.resume != nil {
		st.resumeReplay()
		return
	}
	replies, err := st.fetchReplay(0)
	if err != nil {
		st.sub.stats.CatchUpsFailed.Add(1)
		st.log.Info("catch-up replay failed; the first live message sets the seq", "error", err.Error())
		return
	}
	st.sub.stats.CatchUps.Add(1)
	if len(replies) == 0 || st.have {
		return
	}
	next := st.deliverRun(replies)
	// The live messages that raced the replay (seq 0 among them) are its
	// duplicates, not a restart.
	st.caughtUp = true
	st.log.Info("caught up with the batches published before the subscription", "from_seq", replies[0].seq, "to_seq", next)
}

// onDemandReplay serves RequestReplay: every batch the engine holds from
// seq from on is delivered again, even those delivered before.
func (st *stream) onDemandReplay(from uint64) {
	replies, err := st.fetchReplay(from)
	if err == nil && len(replies) == 0 && st.have && st.last >= from {
		err = fmt.Errorf("the engine's replay buffer holds nothing from seq %d", from)
	}
	if err != nil {
		st.sub.stats.ReplaysFailed.Add(1)
		to := from + 1
		if st.have && st.last+1 > to {
			to = st.last + 1
		}
		st.lost(from, to, err)
		return
	}
	st.sub.stats.ReplaysOK.Add(1)
	if len(replies) == 0 {
		return
	}
	first := replies[0].seq
	if first > from {
		st.lost(from, first, fmt.Errorf("the engine's replay buffer starts at seq %d, after %d", first, from))
	}
	next := st.deliverRun(replies)
	st.sub.stats.GapsReplayed.Add(1)
	st.emit(StreamEvent{Kind: StreamGapReplayed, From: first, To: next})
}
