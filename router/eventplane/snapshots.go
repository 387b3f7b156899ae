package eventplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/snapshot"
)

// Snapshot objects: one per replica ("snapshot.<replica>", replaced at
// each write), the router/snapshot format, with the stream sequence the
// index covers in the metadata. Every replica's index is the same at the
// same sequence, so the newest of any replica will do.
const (
	metaStreamSeq = "stream_seq"
	metaReplica   = "replica"
	// metaEpoch names the stream the sequence is of (its creation time): a
	// snapshot of a stream since recreated covers nothing of the new one.
	metaEpoch = "stream_epoch"
	// metaPartition: the models the snapshot holds ("" = every model).
	metaPartition = "partition"
)

func (p *Plane) snapshotName() string { return "snapshot." + p.opts.ReplicaID }

func (p *Plane) snapshotLoop() {
	t := time.NewTicker(p.opts.SnapshotInterval)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
			if p.writeSnapshot() == nil { // else logged and counted
				p.checkRetentionSpan()
			}
		}
	}
}

// WriteSnapshot saves the index and the stream sequence it covers to the
// object store now (the loop does it every SnapshotInterval).
func (p *Plane) WriteSnapshot() error { return p.writeSnapshot() }

func (p *Plane) writeSnapshot() error {
	start := time.Now()
	p.applyMu.Lock()
	seq, epoch := p.applied, p.epoch.Load()
	if seq == p.lastSnapSeq && seq != 0 {
		p.applyMu.Unlock()
		return nil // nothing new
	}
	p.applyMu.Unlock()
	// Exported while the stream is applied on: the apply loop does not
	// pause for it (the indexer locks one model's ranks at a time while it
	// dumps that model). The export is at or after seq, rank by rank, and
	// each rank's state matches its last seq; a replica restoring it
	// applies the stream from seq+1, and what the export already holds is
	// skipped by engine seq (seqsOf), while a restart or rebuild marker
	// in between clears the rank and the batches after it rebuild it.
	saved := p.ix.Export()
	data, err := snapshot.Encode(saved)
	if err == nil {
		// The object store writes it in chunks; the deadline only catches a
		// stalled transfer, so it grows with the snapshot (a fixed 5 s could
		// never write a fleet-sized index).
		ctx, cancel := context.WithTimeout(context.Background(), transferTimeout(int64(len(data))))
		_, err = p.obj.Put(ctx, jetstream.ObjectMeta{
			Name: p.snapshotName(),
			Metadata: map[string]string{
				metaStreamSeq: strconv.FormatUint(seq, 10),
				metaReplica:   p.opts.ReplicaID,
				metaEpoch:     strconv.FormatInt(epoch, 10),
				metaPartition: p.partitionName(),
			},
		}, bytes.NewReader(data))
		cancel()
	}
	if err != nil {
		p.stats.SnapshotErrors.Add(1)
		p.log.Error("kvrouter: writing the snapshot to the object store failed", "stream_seq", seq, "error", err.Error())
		return fmt.Errorf("eventplane: snapshot at stream seq %d: %w", seq, err)
	}
	p.applyMu.Lock()
	p.lastSnapSeq = max(p.lastSnapSeq, seq)
	p.applyMu.Unlock()
	p.stats.Snapshots.Add(1)
	p.log.Debug("kvrouter: snapshot written to the object store", "stream_seq", seq, "bytes", len(data), "took", time.Since(start).String())
	return nil
}

// restoreNewest loads the newest snapshot of any replica into the
// (empty) indexer and sets the stream sequence to consume after. No
// snapshot: the stream from its start. A snapshot that does not load is
// logged and the next newest tried.
func (p *Plane) restoreNewest() error {
	ctx, cancel := context.WithTimeout(p.ctx, 60*time.Second)
	defer cancel()
	infos, err := p.obj.List(ctx)
	sizes := map[string]uint64{}
	for _, in := range infos {
		sizes[in.Name] = in.Size
	}
	if err != nil && !errors.Is(err, jetstream.ErrNoObjectsFound) {
		return fmt.Errorf("eventplane: listing snapshots: %w", err)
	}
	type cand struct {
		name string
		seq  uint64
	}
	var cands []cand
	for _, in := range infos {
		if in.Deleted {
			continue
		}
		seq, err := strconv.ParseUint(in.Metadata[metaStreamSeq], 10, 64)
		if err != nil {
			p.log.Warn("kvrouter: a snapshot object without a stream sequence is ignored", "name", in.Name)
			continue
		}
		if in.Metadata[metaPartition] != p.partitionName() {
			continue // another partition's: other models
		}
		if e, ok := in.Metadata[metaEpoch]; ok && e != strconv.FormatInt(p.epoch.Load(), 10) {
			p.log.Warn("kvrouter: a snapshot of an earlier incarnation of the event stream is ignored", "name", in.Name)
			continue
		}
		cands = append(cands, cand{in.Name, seq})
	}
	// Newest first.
	for i := 1; i < len(cands); i++ {
		for j := i; j > 0 && cands[j].seq > cands[j-1].seq; j-- {
			cands[j], cands[j-1] = cands[j-1], cands[j]
		}
	}
	info, err := p.stream.Info(ctx)
	if err != nil {
		return fmt.Errorf("eventplane: stream info: %w", err)
	}
	for _, c := range cands {
		if c.seq > info.State.LastSeq {
			p.log.Warn("kvrouter: a snapshot newer than the stream is ignored (was the stream recreated?)",
				"name", c.name, "stream_seq", c.seq, "stream_last_seq", info.State.LastSeq)
			continue
		}
		if err := p.loadSnapshot(c.name, c.seq, sizes[c.name]); err != nil {
			p.log.Error("kvrouter: snapshot unusable; trying an older one", "name", c.name, "error", err.Error())
			continue
		}
		p.checkRetention(c.seq, info.State.FirstSeq)
		return nil
	}
	p.checkRetention(0, info.State.FirstSeq)
	p.log.Info("kvrouter: no snapshot on the event plane; applying the stream from its start", "stream_messages", info.State.Msgs)
	return nil
}

func (p *Plane) loadSnapshot(name string, seq, size uint64) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(p.ctx, transferTimeout(int64(min(size, 1<<62))))
	defer cancel()
	data, err := p.obj.GetBytes(ctx, name)
	if err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	saved, err := snapshot.Decode(data, p.ix.BlockSize())
	if err != nil {
		return err
	}
	if err := p.ix.Restore(saved); err != nil {
		return err
	}
	p.applyMu.Lock()
	p.applied, p.lastSnapSeq = seq, seq
	p.appliedSeq.Store(seq)
	p.seqs = seqsOf(saved)
	p.applyMu.Unlock()
	p.log.Info("kvrouter: snapshot restored from the event plane; consuming the stream after it",
		"name", name, "stream_seq", seq, "workers", len(saved.Workers), "took", time.Since(start).String())
	return nil
}

// minTransferRate is the slowest snapshot transfer taken for alive: a
// snapshot of n bytes gets 10 s plus n at this rate before its write or
// read is given up as stalled.
const minTransferRate = 4 << 20 // bytes/s

func transferTimeout(n int64) time.Duration {
	return 10*time.Second + time.Duration(n/minTransferRate+1)*time.Second
}

// seqsOf rebuilds the de-duplication state from a snapshot's ranks: the
// last seq each engine stream applied.
func seqsOf(s indexer.Saved) map[seqKey]seqState {
	out := map[seqKey]seqState{}
	for _, rs := range s.Ranks {
		if !rs.HaveSeq {
			continue
		}
		k := seqKey{rs.Worker.ID, rs.StreamRank}
		if st := out[k]; !st.have || rs.LastSeq > st.last {
			out[k] = seqState{have: true, last: rs.LastSeq}
		}
	}
	return out
}

// checkRetention handles a stream that no longer holds the messages right
// after the snapshot: they aged out (the snapshot interval is not well
// below the stream's max age, or the byte limit holds less than one
// interval of events). The index would have a silent hole: instead every
// engine this replica registers is rebuilt from the engine (rebuild.go),
// and the replica is not ready until it is.
func (p *Plane) checkRetention(snapSeq, firstSeq uint64) {
	if firstSeq > snapSeq+1 {
		p.log.Error("kvrouter: the event stream no longer holds every message after the snapshot: they aged out; "+
			"rebuilding every engine from the engines (not ready until then); "+
			"keep the snapshot interval well below the stream's max age, and the byte limit above one interval of events",
			"snapshot_seq", snapSeq, "stream_first_seq", firstSeq, "lost_messages", firstSeq-snapSeq-1)
		p.rebuildAll.Store(true)
	}
}
