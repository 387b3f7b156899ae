package eventplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/ingest"
	"github.com/kvhash/kvhash/router/route"
)

// Plane is one replica's side of the event plane. It is the server's
// ingest layer (Subscribe, Unsubscribe, RequestReplay, Close, as
// router/serve's Ingest wants): subscriptions become leases, and the
// replica ingests only the engines whose lease it holds, while it applies
// every engine's events from the stream.
type Plane struct {
	opts  Options
	log   *slog.Logger
	ix    *indexer.Indexer
	stats Stats

	emb    *Embedded // the in-process server, when URL is "embedded"
	tmpDir string    // its temporary store, removed at Close

	nc     *nats.Conn
	js     jetstream.JetStream
	stream jetstream.Stream
	kv     jetstream.KeyValue
	obj    jetstream.ObjectStore

	ctx    context.Context
	cancel context.CancelFunc
	loops  sync.WaitGroup

	// The apply side: applyMu is held while one stream message is applied
	// (a snapshot reads its sequence under it, then exports without it:
	// snapshots.go).
	applyMu     sync.Mutex
	applied     uint64              // the last stream sequence applied
	seqs        map[seqKey]seqState // per engine stream: the last seq applied
	appliedSeq  atomic.Uint64       // applied, for readers without the lock
	consumeCtx  jetstream.ConsumeContext
	lastSnapSeq uint64
	consumerGen uint64 // bumped when the consumer is replaced: the old one's late messages are ignored
	// epoch names the stream's incarnation (its creation time): a stream
	// recreated under the same name (NATS lost its store) is a new one.
	epoch atomic.Int64
	// afterApply, when set, hears each message applied (benchmarks).
	afterApply atomic.Pointer[func(Message)]

	ready    atomic.Bool
	readyWhy atomic.Pointer[string]

	// The ingest side.
	sub     *ingest.Subscriber
	leaseMu sync.Mutex
	leases  map[uint64]*lease
	kick    chan struct{} // runs the lease loop now
	// rebuildAll: the stream lost messages this replica needed (retention):
	// every engine it registers is rebuilt from the engine (rebuild.go).
	rebuildAll    atomic.Bool
	lastRebuildRq time.Time    // readinessLoop's: when it last asked the holders
	streamSpan    atomic.Int64 // the time the stream's messages span, at the last snapshot (retention.go)

	conn     atomic.Pointer[scope] // the NATS connection's life (lease.go)
	pubMu    sync.Mutex
	pubLast  map[seqKey]uint64
	closeMu  sync.Mutex
	isClosed bool

	// Load sync.
	rt       atomic.Pointer[route.Router]
	instance string
	peersMu  sync.Mutex
	peers    map[string]*peer
	holdings map[string]*peerHoldings // by replica, from fleet messages (fleet.go); under peersMu
	fleetSub *nats.Subscription
	loadSub  *nats.Subscription
	loadOut  chan loadMsg // the router's changes, to loadSender
}

// New connects a replica to the event plane over ix, which must be empty
// (the newest snapshot is restored into it), and starts consuming the
// stream. Subscribe engines next; AttachRouter for load sync.
func New(opts Options, ix *indexer.Indexer) (*Plane, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	if ix == nil {
		return nil, errors.New("eventplane: nil indexer")
	}
	p := &Plane{
		opts: opts, log: opts.Logger.With("replica", opts.ReplicaID), ix: ix,
		seqs: map[seqKey]seqState{}, leases: map[uint64]*lease{}, pubLast: map[seqKey]uint64{},
		peers: map[string]*peer{}, holdings: map[string]*peerHoldings{}, instance: newInstance(), kick: make(chan struct{}, 1),
	}
	p.setNotReady("starting")
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.conn.Store(newScope(p.ctx))
	ok := false
	defer func() {
		if !ok {
			p.teardown()
		}
	}()
	url := opts.URL
	if url == "embedded" {
		dir := opts.StoreDir
		if dir == "" {
			d, err := os.MkdirTemp("", "kvrouter-nats-*")
			if err != nil {
				return nil, fmt.Errorf("eventplane: embedded store: %w", err)
			}
			dir, p.tmpDir = d, d
		}
		emb, err := StartEmbedded(dir, 0)
		if err != nil {
			return nil, err
		}
		p.emb, url = emb, emb.URL()
		p.log.Info("kvrouter: embedded NATS server with JetStream started", "url", url, "store", dir)
	}
	if err := p.connect(url); err != nil {
		return nil, err
	}
	if err := p.restoreNewest(); err != nil {
		return nil, err
	}
	sub, err := ingest.New(ingest.Options{Handler: &publisher{p: p}, Logger: opts.Logger})
	if err != nil {
		return nil, fmt.Errorf("eventplane: %w", err)
	}
	p.sub = sub
	if err := p.startConsumer(); err != nil {
		return nil, err
	}
	if err := p.startFleetSync(); err != nil {
		return nil, err
	}
	if err := p.startLoadSync(); err != nil {
		return nil, err
	}
	p.goLoop(p.readinessLoop)
	p.goLoop(p.leaseLoop)
	if opts.SnapshotInterval > 0 {
		p.goLoop(p.snapshotLoop)
	}
	ok = true
	return p, nil
}

func (p *Plane) goLoop(f func()) {
	p.loops.Add(1)
	go func() {
		defer p.loops.Done()
		f()
	}()
}

// connect dials NATS (retrying forever once connected: a replica cut off
// reports not ready and recovers) and makes the stream and buckets.
func (p *Plane) connect(url string) error {
	nc, err := nats.Connect(url,
		nats.Name("kvrouter-"+p.opts.ReplicaID),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250*time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			p.setNotReady("disconnected from NATS")
			p.connScope().cancel() // lease requests in flight end now
			p.kickLeases()         // and the engines held stop at once
			if p.ctx.Err() != nil {
				return // closing: no news
			}
			p.log.Warn("kvrouter: disconnected from NATS; reconnecting (not ready meanwhile)", "error", errString(err))
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			p.conn.Store(newScope(p.ctx))
			p.kickLeases()
			p.log.Info("kvrouter: reconnected to NATS; catching up", "url", c.ConnectedUrl())
		}),
	)
	if err != nil {
		return fmt.Errorf("eventplane: connect %s: %w", url, err)
	}
	p.nc = nc
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("eventplane: jetstream: %w", err)
	}
	p.js = js
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	created, err := p.ensureStore(ctx)
	if err != nil {
		return err
	}
	if len(created) > 0 {
		p.log.Info("kvrouter: event plane created", "created", created)
	}
	if err := p.adoptSharedSettings(ctx); err != nil {
		return err
	}
	info, err := p.stream.Info(ctx)
	if err != nil {
		return fmt.Errorf("eventplane: stream info: %w", err)
	}
	p.epoch.Store(info.Created.UnixNano())
	return nil
}

// ReplicaID is this replica's name.
func (p *Plane) ReplicaID() string { return p.opts.ReplicaID }

// Stats returns the live counters.
func (p *Plane) Stats() *Stats { return &p.stats }

// URL is the NATS server the replica is connected to.
func (p *Plane) URL() string { return p.nc.ConnectedUrl() }

// Ready reports whether the replica is connected to NATS and has applied
// the stream up to where it stood a moment ago (see readinessLoop); why
// says what is missing.
func (p *Plane) Ready() (ok bool, why string) {
	if p.ready.Load() {
		return true, ""
	}
	if w := p.readyWhy.Load(); w != nil {
		return false, *w
	}
	return false, "not ready"
}

func (p *Plane) setNotReady(why string) {
	p.readyWhy.Store(&why)
	p.ready.Store(false)
}

// readinessLoop: ready while connected and caught up, meaning every
// message the stream held at the previous check is applied (a replica
// under a steady load is never more than one check behind).
func (p *Plane) readinessLoop() {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	target, haveTarget := uint64(0), false
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
		}
		if !p.nc.IsConnected() {
			p.setNotReady("disconnected from NATS")
			haveTarget = false
			continue
		}
		ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
		info, resynced, err := p.checkStream(ctx)
		var last uint64
		if err == nil {
			last, err = p.lastSeq(ctx, info)
		}
		cancel()
		if err != nil {
			p.setNotReady("cannot read the event stream: " + err.Error())
			haveTarget = false
			continue
		}
		applied := p.appliedSeq.Load()
		switch pending := p.rebuildsPending(); {
		case resynced || !haveTarget:
		case applied < target:
			p.setNotReady(fmt.Sprintf("catching up: applied stream sequence %d of %d", applied, target))
		case pending > 0:
			p.setNotReady(fmt.Sprintf("rebuilding %d engines from the engines: the event stream lost or dropped what this replica applied", pending))
			p.askRebuilds()
		default:
			p.ready.Store(true)
		}
		target, haveTarget = last, true
	}
}

// Close leaves the plane: it stops ingesting and releases its leases (so
// another replica takes its engines at once), writes a last snapshot,
// tells the others its requests are gone, and disconnects.
func (p *Plane) Close() error {
	p.closeMu.Lock()
	if p.isClosed {
		p.closeMu.Unlock()
		return nil
	}
	p.isClosed = true
	p.closeMu.Unlock()
	var errs []error
	p.releaseAll()
	switch {
	case p.opts.SnapshotInterval <= 0:
	case !p.nc.IsConnected():
		// Waiting for NATS would hold the shutdown up; the other replicas'
		// snapshots (or this one's last periodic one) cover the stream.
		p.log.Warn("kvrouter: no last snapshot: cut off from NATS")
	default:
		if err := p.writeSnapshot(); err != nil {
			errs = append(errs, err)
		}
	}
	p.sayBye()
	p.teardown()
	return errors.Join(errs...)
}

// kill drops the replica as a crash would: no lease released, no
// goodbye, no last snapshot (tests).
func (p *Plane) kill() {
	p.closeMu.Lock()
	p.isClosed = true
	p.closeMu.Unlock()
	for _, l := range p.leaseList() {
		l.held.Store(false)
		if h := l.hold.Swap(nil); h != nil {
			h.cancel()
		}
	}
	p.teardown()
}

func (p *Plane) teardown() {
	p.cancel()
	if p.sub != nil {
		_ = p.sub.Close()
	}
	p.loops.Wait() // first: the readiness loop may replace the consumer
	if p.consumeCtx != nil {
		p.consumeCtx.Stop()
	}
	if rt := p.rt.Load(); rt != nil {
		rt.SetLoadObserver(nil)
	}
	if p.nc != nil {
		p.nc.Close()
	}
	if p.emb != nil {
		p.emb.Shutdown()
	}
	if p.tmpDir != "" {
		_ = os.RemoveAll(p.tmpDir)
	}
	p.setNotReady("closed")
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
