package eventplane

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvhash/kvhash/router/ingest"
)

// lease is one engine this replica was asked to subscribe to, and
// whether it holds the engine's lease (and so ingests it).
type lease struct {
	sub ingest.Subscription

	// mu serializes this engine's subscribe and unsubscribe (the lease
	// loop's and the server's); the fields below are guarded by it.
	mu         sync.Mutex
	removed    bool
	rev        uint64    // the lease key's revision we wrote last
	renewedAt  time.Time // the last successful write
	target     uint64    // the stream sequence to apply before ingesting
	subscribed bool
	deferSince time.Time // when this replica first left the free lease to its preferred replica
	markedAt   time.Time // when this replica last published the engine's rebuild markers
	handedAt   time.Time // when this replica last handed the engine over (spread.go)
	keepUntil  time.Time // no hand-over before: the last one came back untaken

	held atomic.Bool // read by the publisher without mu
	// hold lives while the lease is held: the publisher's requests end
	// with it, so dropping a lease never waits on a blocked publish.
	hold atomic.Pointer[scope]
	// rebuild: the stream was recreated (reset.go) and this engine's
	// restart marker is not applied yet.
	rebuild atomic.Bool
	// nonce scopes the Nats-Msg-Ids this holder publishes for the engine
	// after its last rebuild (0: none yet): the engine's replay from seq 0
	// must not be taken for the batches published before, inside
	// JetStream's duplicate window.
	nonce atomic.Int64
}

// scope is a context with its cancel.
type scope struct {
	context.Context
	cancel context.CancelFunc
}

func newScope(parent context.Context) *scope {
	ctx, cancel := context.WithCancel(parent)
	return &scope{ctx, cancel}
}

// heldLease is the engine's lease while this replica holds it, else nil.
func (p *Plane) heldLease(worker uint64) *lease {
	p.leaseMu.Lock()
	l := p.leases[worker]
	p.leaseMu.Unlock()
	if l == nil || !l.held.Load() {
		return nil
	}
	return l
}

// Subscribe asks for an engine: the replica ingests it while it holds
// the engine's lease (now, or when its holder dies). The Sources are
// those the engine's ranks will have, whichever replica ingests them.
func (p *Plane) Subscribe(sub ingest.Subscription) ([]ingest.Source, error) {
	srcs := make([]ingest.Source, 0, max(sub.DPSize, 1))
	for r := range uint32(max(sub.DPSize, 1)) {
		ep, err := ingest.RankEndpoint(sub.Endpoint, r)
		if err != nil {
			return nil, fmt.Errorf("eventplane: subscribe worker %d: %w", sub.WorkerID, err)
		}
		srcs = append(srcs, ingest.Source{Model: sub.Model, WorkerID: sub.WorkerID, DPRank: r, Endpoint: ep, Topic: sub.Topic})
	}
	if !p.inPartition(sub.Model) {
		// Another partition's model: its replicas ingest it.
		p.log.Info("kvrouter: worker of a model outside this replica's partition; its replicas ingest it",
			"worker_id", sub.WorkerID, "model", sub.Model, "partition", p.opts.Models)
		return srcs, nil
	}
	p.leaseMu.Lock()
	if _, dup := p.leases[sub.WorkerID]; dup {
		p.leaseMu.Unlock()
		return nil, fmt.Errorf("eventplane: worker %d is already subscribed", sub.WorkerID)
	}
	l := &lease{sub: sub}
	l.rebuild.Store(p.rebuildAll.Load()) // the stream lost what this replica needs of it
	p.leases[sub.WorkerID] = l
	p.leaseMu.Unlock()
	p.tend(l) // take it now if it is free, rather than a tick later
	return srcs, nil
}

// Unsubscribe gives an engine up: its subscription stops and its lease,
// if held, is released for another replica. It returns the ranks stopped.
func (p *Plane) Unsubscribe(model string, workerID uint64) int {
	p.leaseMu.Lock()
	l := p.leases[workerID]
	delete(p.leases, workerID)
	p.leaseMu.Unlock()
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.removed = true
	n := 0
	if l.held.Load() {
		n = p.dropLocked(l, "unsubscribed")
		ctx, cancel := context.WithTimeout(p.ctx, 2*time.Second)
		_ = p.kv.Delete(ctx, leaseKey(workerID), jetstream.LastRevision(l.rev))
		cancel()
	}
	return n
}

// RequestReplay asks the engine for batches again, when this replica
// ingests it (the indexer's quarantine). Batches already applied come
// back with seqs the stream has seen: they are skipped as duplicates.
func (p *Plane) RequestReplay(src ingest.Source, from uint64) error {
	if !p.holds(src.WorkerID) {
		return fmt.Errorf("eventplane: worker %d is ingested by another replica", src.WorkerID)
	}
	return p.sub.RequestReplay(src, from)
}

// holds reports whether this replica holds the engine's lease.
func (p *Plane) holds(worker uint64) bool {
	p.leaseMu.Lock()
	l := p.leases[worker]
	p.leaseMu.Unlock()
	return l != nil && l.held.Load()
}

// Holding lists the workers whose engines this replica ingests.
func (p *Plane) Holding() []uint64 {
	var out []uint64
	for _, l := range p.leaseList() {
		if l.held.Load() {
			out = append(out, l.sub.WorkerID)
		}
	}
	return out
}

func (p *Plane) leaseList() []*lease {
	p.leaseMu.Lock()
	defer p.leaseMu.Unlock()
	out := make([]*lease, 0, len(p.leases))
	for _, l := range p.leases {
		out = append(out, l)
	}
	return out
}

// leaseLoop renews the leases held and tries to take the others, three
// times per TTL, all in one pass whose requests run side by side (a
// thousand engines renew in one round trip's time, not a thousand). Cut
// off from NATS, it stops ingesting every engine at once: the leases
// cannot be renewed, and another replica may take them after the TTL.
func (p *Plane) leaseLoop() {
	t := time.NewTicker(p.opts.LeaseTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
		case <-p.kick:
		}
		if !p.nc.IsConnected() {
			p.dropAll("cut off from NATS")
			continue
		}
		p.forEachLease(p.tend)
	}
}

// kickLeases makes the lease loop run now (a disconnection, a resync).
func (p *Plane) kickLeases() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// leaseParallelism bounds the lease requests in flight at once.
const leaseParallelism = 64

// forEachLease runs f on every lease, side by side, and waits.
func (p *Plane) forEachLease(f func(*lease)) {
	sem := make(chan struct{}, leaseParallelism)
	var wg sync.WaitGroup
	for _, l := range p.leaseList() {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			f(l)
		}()
	}
	wg.Wait()
}

// dropAll stops ingesting every engine held (the keys stay: NATS cannot
// be reached to delete them; they expire, or this replica takes them
// back when it reconnects first).
func (p *Plane) dropAll(why string) {
	p.forEachLease(func(l *lease) {
		if !l.held.Load() {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.held.Load() {
			p.dropLocked(l, why)
		}
	})
}

// connScope is the current NATS connection's context: cancelled when the
// connection drops, so no lease request waits on a dead connection.
func (p *Plane) connScope() *scope {
	if c := p.conn.Load(); c != nil {
		return c
	}
	return &scope{p.ctx, func() {}}
}

// tend renews or takes one lease, then subscribes once the replica has
// applied the stream as far as it stood when the lease was taken, so the
// engine is asked to replay from the last seq anyone published.
func (p *Plane) tend(l *lease) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.removed || p.ctx.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(p.connScope(), p.opts.LeaseTTL/2)
	defer cancel()
	key, me := leaseKey(l.sub.WorkerID), []byte(p.opts.ReplicaID)
	now := time.Now()
	if l.held.Load() {
		rev, err := p.kv.Update(ctx, key, me, l.rev)
		if err != nil && isLeaseConflict(err) {
			rev, err = p.reclaim(ctx, key)
		}
		switch {
		case err == nil:
			l.rev, l.renewedAt = rev, now
			if to := p.preferred(l.sub.WorkerID); to != p.opts.ReplicaID && now.After(l.keepUntil) {
				p.handOverLocked(ctx, l, to)
				return
			}
		case isLeaseConflict(err):
			p.dropLocked(l, "the lease was taken by another replica")
			return
		case now.Sub(l.renewedAt) > p.opts.LeaseTTL:
			p.dropLocked(l, "the lease could not be renewed within its TTL: "+err.Error())
			return
		default:
			return // try again next tick
		}
	} else {
		if p.deferLocked(ctx, l, now) {
			return
		}
		rev, err := p.kv.Create(ctx, key, me)
		if errors.Is(err, jetstream.ErrKeyExists) {
			// Ours from before a restart under the same replica id?
			if e, gerr := p.kv.Get(ctx, key); gerr == nil && string(e.Value()) == p.opts.ReplicaID {
				rev, err = p.kv.Update(ctx, key, me, e.Revision())
			}
		}
		if err != nil {
			return // held by another replica, or NATS is unreachable
		}
		info, err := p.stream.Info(ctx)
		var last uint64
		if err == nil {
			last, err = p.lastSeq(ctx, info)
		}
		if err != nil {
			_ = p.kv.Delete(ctx, key, jetstream.LastRevision(rev))
			return
		}
		l.rev, l.renewedAt, l.target = rev, now, last
		if !l.handedAt.IsZero() && now.Sub(l.handedAt) < 3*p.opts.LeaseTTL {
			// Handed over and back untaken: the preferred replica hears the
			// fleet but cannot take leases. Keep the engine a while rather
			// than leave it unread every other TTL.
			l.keepUntil = now.Add(handOverBackoff * p.opts.LeaseTTL)
			p.log.Warn("kvrouter: an engine handed over came back untaken; keeping it a while",
				"worker_id", l.sub.WorkerID, "for", (handOverBackoff * p.opts.LeaseTTL).String())
		}
		l.hold.Store(newScope(p.ctx))
		l.held.Store(true)
		p.stats.LeasesTaken.Add(1)
		p.log.Info("kvrouter: engine lease taken; ingesting it once caught up", "worker_id", l.sub.WorkerID,
			"model", l.sub.Model, "stream_seq", l.target)
	}
	if l.subscribed && l.rebuild.Load() {
		// To be rebuilt (reset.go, rebuild.go): the subscription starts
		// again below, after the markers, from seq 0.
		p.sub.Unsubscribe(l.sub.Model, l.sub.WorkerID)
		l.subscribed = false
	}
	// A rebuild does not wait for the stream position: its markers clear
	// what came before, wherever the replicas stand.
	if !l.subscribed && (l.rebuild.Load() || p.appliedSeq.Load() >= l.target) {
		sub := l.sub
		sub.ResumeAfter = p.resumeAfter(sub.WorkerID)
		if l.rebuild.Load() {
			// The stream was recreated (reset.go), lost what this replica
			// needed, or another replica asked (rebuild.go): every replica
			// clears the engine at the marker, and the engine replays all it
			// holds.
			l.nonce.Store(now.UnixNano())
			if err := p.publishRebuildMarkers(ctx, sub, l.nonce.Load()); err != nil {
				p.log.Warn("kvrouter: publishing an engine's rebuild marker failed; retrying", "worker_id", sub.WorkerID, "error", err.Error())
				return
			}
			l.rebuild.Store(false)
			l.markedAt = now
			sub.ResumeAfter = replayAll(sub.DPSize)
		}
		if _, err := p.sub.Subscribe(sub); err != nil {
			p.log.Error("kvrouter: subscribing to a leased engine failed", "worker_id", sub.WorkerID, "error", err.Error())
			return
		}
		l.subscribed = true
		p.log.Info("kvrouter: ingesting engine", "worker_id", sub.WorkerID, "model", sub.Model,
			"endpoint", sub.Endpoint, "resume_after", sub.ResumeAfter)
	}
}

// deferLocked reports whether to leave a lease to the engine's preferred
// replica (spread.go): while the key is held, and for one TTL after this
// replica first found it free.
func (p *Plane) deferLocked(ctx context.Context, l *lease, now time.Time) bool {
	if p.preferred(l.sub.WorkerID) == p.opts.ReplicaID {
		l.deferSince = time.Time{}
		return false
	}
	_, err := p.kv.Get(ctx, leaseKey(l.sub.WorkerID))
	switch {
	case err == nil: // held (by whom does not matter)
		l.deferSince = time.Time{}
		return true
	case !errors.Is(err, jetstream.ErrKeyNotFound):
		return true // NATS trouble: try again next tick
	case l.deferSince.IsZero():
		l.deferSince = now
		return true
	}
	return now.Sub(l.deferSince) < p.opts.LeaseTTL
}

// handOverLocked gives a held engine to its preferred replica: it stops
// ingesting and deletes the key, and the preferred replica takes it on
// its next tick, resuming after the last seq applied.
func (p *Plane) handOverLocked(ctx context.Context, l *lease, to string) {
	l.handedAt = time.Now()
	p.dropLocked(l, handedOver)
	_ = p.kv.Delete(ctx, leaseKey(l.sub.WorkerID), jetstream.LastRevision(l.rev))
	p.stats.HandedOver.Add(1)
	p.log.Info("kvrouter: engine handed over to its preferred replica", "worker_id", l.sub.WorkerID, "to", to)
}

// handOverBackoff: in lease TTLs, how long a holder keeps an engine whose
// hand-over came back untaken.
const handOverBackoff = 20

// handedOver is dropLocked's reason for a hand-over: not a lost lease.
const handedOver = "handed over"

// dropLocked stops ingesting an engine whose lease is gone; it returns the
// ranks stopped.
func (p *Plane) dropLocked(l *lease, why string) int {
	l.held.Store(false) // first: a publish waiting on NATS gives up
	if h := l.hold.Swap(nil); h != nil {
		h.cancel()
	}
	n := 0
	if l.subscribed {
		n = p.sub.Unsubscribe(l.sub.Model, l.sub.WorkerID)
		l.subscribed = false
	}
	if why != "unsubscribed" && why != handedOver {
		p.stats.LeasesLost.Add(1)
		p.log.Warn("kvrouter: engine lease lost; another replica ingests it", "worker_id", l.sub.WorkerID, "why", why)
	}
	return n
}

// releaseAll gives every lease up (a clean shutdown): the engines' next
// holders need not wait for the TTL.
func (p *Plane) releaseAll() {
	for _, l := range p.leaseList() {
		l.mu.Lock()
		l.removed = true
		if l.held.Load() {
			p.dropLocked(l, "unsubscribed")
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = p.kv.Delete(ctx, leaseKey(l.sub.WorkerID), jetstream.LastRevision(l.rev))
			cancel()
		}
		l.mu.Unlock()
	}
}

// isLeaseConflict: the key moved on (another holder wrote it) or is gone
// (expired): either way the lease is not ours any more.
func isLeaseConflict(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyNotFound) ||
		errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// reclaim settles a renewal that found the key moved on. A renewal whose
// reply timed out may still have been written: then the key holds this
// replica's id at a newer revision, and the lease is still ours. A key
// that expired is taken again if nobody took it meanwhile. Anything else
// is a conflict: another replica holds the engine.
func (p *Plane) reclaim(ctx context.Context, key string) (uint64, error) {
	me := []byte(p.opts.ReplicaID)
	e, err := p.kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return p.kv.Create(ctx, key, me)
	case err != nil:
		return 0, err
	case string(e.Value()) != p.opts.ReplicaID:
		return 0, jetstream.ErrKeyExists
	}
	return p.kv.Update(ctx, key, me, e.Revision())
}
