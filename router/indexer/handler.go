package indexer

import (
	"fmt"
	"time"

	"github.com/kvhash/kvhash/router/ingest"
)

var _ ingest.Handler = (*Indexer)(nil)

// HandleBatch applies one engine batch: its events, in order, to the
// rank's index (the batch's dp rank when it names one, else the
// Source's). It never fails: what cannot be applied is counted.
func (x *Indexer) HandleBatch(src ingest.Source, b *ingest.Batch) {
	if b == nil {
		return
	}
	dpRank := src.DPRank
	if b.DPRank != nil {
		dpRank = *b.DPRank
	}
	w, r := x.sourceRank(src, dpRank, len(b.Events))
	if r == nil {
		return
	}
	if b.DPRank != nil {
		// Only a rank that was accepted: the stream's gaps and restarts go
		// to it.
		x.noteStreamRank(src, dpRank)
	}
	r.awaiting.Store(false) // a batch came: the stream is up
	replay, verdictChanged := x.applyBatch(src, w, r, b)
	if replay != nil {
		x.requestReplay(*replay, r.w)
	}
	if verdictChanged {
		x.checkAgreement(w.key)
	}
}

// applyBatch applies a batch with the rank's mutex held and returns the
// stream to replay, if a quarantine wants one, and whether the rank's
// engine-hash verdict changed.
func (x *Indexer) applyBatch(src ingest.Source, w *worker, r *rank, b *ingest.Batch) (*ingest.Source, bool) {
	now := x.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gone {
		return nil, false
	}
	if !r.haveSeq && b.Seq > 0 && r.State() == StateLive {
		// The router joined a running engine's stream (it started after
		// the engine, or the rank was removed and came back): the blocks
		// stored before are unknown, and their children's parents will be
		// missing. Not a stability problem: the rank rebuilds as after a
		// lost gap.
		reason := fmt.Sprintf("joined the engine's stream at seq %d: blocks stored before are unknown", b.Seq)
		r.setStateLocked(StateDegraded, reason, now)
		x.opts.Logger.Info("kvrouter: worker degraded: "+reason+"; scored by load only until its new events rebuild it",
			"worker_id", r.w.ID, "dp_rank", r.w.DPRank, "settle", x.opts.DegradedSettle.String())
	}
	r.haveSeq, r.lastSeq, r.streamRank, r.lastEventAt = true, b.Seq, src.DPRank, now
	r.lag = 0
	if b.Timestamp > 0 {
		engine := time.Unix(0, int64(b.Timestamp*1e9))
		r.lag = max(0, now.Sub(engine).Seconds())
	}
	a := applier{x: x, w: w, r: r, src: &src, eventID: b.Seq}
	for i := range b.Events {
		a.engineEvent(&b.Events[i])
	}
	x.settleLocked(r, now)
	return a.replay, a.verdictChanged
}

// HandleStream records what happened to a stream: restarts clear the rank,
// lost gaps clear it and mark it degraded, malformed messages are counted.
// The rank is the one the stream's last batch named (engines that number
// their ranks globally), else the Source's.
func (x *Indexer) HandleStream(src ingest.Source, ev ingest.StreamEvent) {
	w, r := x.sourceRank(src, x.streamRank(src), 0)
	if r == nil {
		return
	}
	now := x.now()
	log := x.opts.Logger.With("worker_id", r.w.ID, "dp_rank", r.w.DPRank, "model", w.key.Model, "endpoint", src.Endpoint)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gone {
		return
	}
	switch ev.Kind {
	case ingest.StreamConnected:
		r.connected = true
		r.awaiting.Store(false)
		log.Info("kvrouter: engine stream connected")
	case ingest.StreamDisconnected:
		r.connected = false
		log.Warn("kvrouter: engine stream disconnected; retrying", "error", errText(ev.Err))
	case ingest.StreamGapReplayed:
		r.replayed++
		log.Info("kvrouter: missing events replayed", "from_seq", ev.From, "to_seq", ev.To)
	case ingest.StreamGapLost:
		r.gaps++
		w.index.ClearWorker(r.w)
		r.forgetLocked()
		reason := fmt.Sprintf("events lost: seqs [%d, %d) could not be replayed", ev.From, ev.To)
		if r.State() == StateQuarantined {
			// Still unstable; the gap only means its blocks start over.
			r.storesSince = 0
			log.Warn("kvrouter: quarantined worker lost events; its blocks were cleared", "from_seq", ev.From, "to_seq", ev.To)
			return
		}
		r.setStateLocked(StateDegraded, reason, now)
		log.Warn("kvrouter: worker degraded: "+reason+"; its blocks were cleared and it is scored by load only until its new events rebuild it",
			"settle", x.opts.DegradedSettle.String(),
			"fix", "configure the engine's replay endpoint (replay_endpoint) with a buffer (buffer_steps) that covers the router's outages")
	case ingest.StreamRestarted:
		r.restarts++
		r.haveSeq = false
		w.index.ClearWorker(r.w)
		r.forgetLocked()
		r.vs.restarted()
		log.Info("kvrouter: engine restarted (seq back to 0); its blocks were cleared")
		if r.State() == StateDegraded {
			r.setStateLocked(StateLive, "", now)
			log.Info("kvrouter: worker live again: the engine restarted with an empty cache")
		}
	case ingest.StreamMalformed:
		r.malformed++
		// ingest counts and logs each one; the indexer keeps the total.
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// settleLocked ends a degraded or quarantined state whose rule is met
// (see the package doc); called after each batch and by Settle.
func (x *Indexer) settleLocked(r *rank, now time.Time) {
	switch r.State() {
	case StateDegraded:
		if r.storesSince > 0 && now.Sub(r.since) >= x.opts.DegradedSettle {
			r.setStateLocked(StateLive, "", now)
			x.opts.Logger.Info("kvrouter: worker live again: its events rebuilt its blocks after the lost gap",
				"worker_id", r.w.ID, "dp_rank", r.w.DPRank)
		}
	case StateQuarantined:
		// A rank whose engine ids are unstable stays quarantined until a
		// root store verifies again (a restart with a fixed seed).
		if r.vs.verdict != VerdictUnstable && r.storesSince > 0 && now.Sub(r.cleanSince) >= x.opts.QuarantineSettle {
			r.setStateLocked(StateLive, "", now)
			x.opts.Logger.Info("kvrouter: worker live again: its events applied without a stability violation",
				"worker_id", r.w.ID, "dp_rank", r.w.DPRank, "clean_for", x.opts.QuarantineSettle.String())
		}
	}
}

// Settle applies the settle rules of every degraded or quarantined rank
// now, not only when its next batch arrives: a rank whose engine went
// quiet after its clean stretch (an idle fleet, the end of a trace) is
// taken back once its time is up. The serving layer calls it on a timer.
func (x *Indexer) Settle() {
	x.mu.RLock()
	var ranks []*rank
	for _, w := range x.workers {
		for _, r := range w.sorted {
			if s := r.State(); s == StateDegraded || s == StateQuarantined {
				ranks = append(ranks, r)
			}
		}
	}
	x.mu.RUnlock()
	now := x.now()
	for _, r := range ranks {
		r.mu.Lock()
		if !r.gone {
			x.settleLocked(r, now)
		}
		r.mu.Unlock()
	}
}
