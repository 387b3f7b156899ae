package eventplane

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/internal/msgpackcheck"
	"github.com/kvhash/kvhash/router/route"
)

// loadOp is what a load-sync message says.
type loadOp uint8

const (
	opRouted             = loadOp(route.LoadRouted)
	opPrefillDone        = loadOp(route.LoadPrefillDone)
	opFreed              = loadOp(route.LoadFreed)
	opHeartbeat   loadOp = 10 // I am here
	opBye         loadOp = 11 // I am leaving: my requests are gone
)

// loadMsg is one load-sync message on <prefix>.load.<replica>, NATS core
// (no persistence: a replica that missed one is corrected by the request
// TTL, as one router is). Version byte first, then MessagePack.
type loadMsg struct {
	_msgpack struct{} `msgpack:",as_array"`

	Op       loadOp
	Replica  string
	Instance string // changes when the replica restarts: its old requests are gone
	ID       string
	Worker   uint64
	Rank     uint32
	Prefill  uint64
	Blocks   []uint64
}

// peer is another replica as the heartbeats show it.
type peer struct {
	instance string
	seen     time.Time
}

func newInstance() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func encodeLoad(m *loadMsg) ([]byte, error) {
	body, err := msgpack.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("eventplane: encode load message: %w", err)
	}
	return append([]byte{WireVersion}, body...), nil
}

// DecodeLoad reads one load-sync message; bad input is an error.
func decodeLoad(data []byte) (m loadMsg, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: load message decoder panic: %v", ErrMalformed, r)
		}
	}()
	if len(data) == 0 || data[0] != WireVersion {
		return m, fmt.Errorf("%w: load message version", ErrVersion)
	}
	if err := msgpackcheck.Lengths(data[1:]); err != nil {
		return loadMsg{}, fmt.Errorf("%w: load message: %w", ErrMalformed, err)
	}
	if err := msgpack.Unmarshal(data[1:], &m); err != nil {
		return loadMsg{}, fmt.Errorf("%w: load message: %w", ErrMalformed, err)
	}
	if m.Replica == "" {
		return loadMsg{}, fmt.Errorf("%w: load message without a replica", ErrMalformed)
	}
	return m, nil
}

// AttachRouter syncs rt's load with the other replicas: its own changes
// go out, theirs come in.
func (p *Plane) AttachRouter(rt *route.Router) {
	p.rt.Store(rt)
	rt.SetLoadObserver(func(ev route.LoadEvent) {
		m := loadMsg{Op: loadOp(ev.Op), Replica: p.opts.ReplicaID, Instance: p.instance, ID: ev.RequestID}
		if ev.Op == route.LoadRouted {
			m.Worker, m.Rank, m.Prefill, m.Blocks = ev.Worker.ID, ev.Worker.DPRank, ev.PrefillTokens, ev.Blocks
		}
		// Never wait on NATS with the router's lock held: queue it for
		// loadSender; a full queue drops it (load sync is best effort,
		// and the request TTL corrects what a replica misses).
		select {
		case p.loadOut <- m:
		default:
			p.stats.LoadDropped.Add(1)
		}
	})
}

// loadSender publishes the router's load changes in order.
func (p *Plane) loadSender() {
	for {
		select {
		case <-p.ctx.Done():
			return
		case m := <-p.loadOut:
			p.sendLoad(&m)
		}
	}
}

// sendLoad publishes without waiting: NATS buffers while reconnecting.
func (p *Plane) sendLoad(m *loadMsg) {
	data, err := encodeLoad(m)
	if err != nil {
		return
	}
	_ = p.nc.Publish(p.opts.loadSubject(p.opts.ReplicaID), data)
}

func (p *Plane) startLoadSync() error {
	sub, err := p.nc.Subscribe(p.opts.loadSubject("*"), func(msg *nats.Msg) {
		m, err := decodeLoad(msg.Data)
		if err != nil {
			p.log.Warn("kvrouter: load sync message skipped", "subject", msg.Subject, "error", err.Error())
			return
		}
		p.onLoad(&m)
	})
	if err != nil {
		return fmt.Errorf("eventplane: load sync: %w", err)
	}
	p.loadSub = sub
	p.loadOut = make(chan loadMsg, 4096)
	p.goLoop(p.heartbeatLoop)
	p.goLoop(p.loadSender)
	return nil
}

// onLoad applies another replica's load change.
func (p *Plane) onLoad(m *loadMsg) {
	if m.Replica == p.opts.ReplicaID {
		return // our own (or an earlier life's, whose requests died with it)
	}
	owner := m.Replica
	rt := p.rt.Load()
	p.peersMu.Lock()
	pr := p.peers[owner]
	restarted := pr != nil && pr.instance != m.Instance
	if m.Op == opBye {
		delete(p.peers, owner)
		delete(p.holdings, owner)
	} else {
		if pr == nil {
			pr = &peer{}
			p.peers[owner] = pr
		}
		pr.instance, pr.seen = m.Instance, time.Now()
	}
	p.peersMu.Unlock()
	if rt == nil {
		return
	}
	if restarted || m.Op == opBye {
		if n := rt.ExpireOwner(owner); n > 0 {
			p.stats.RemoteExpired.Add(uint64(n))
			p.log.Info("kvrouter: a replica restarted or left; its requests no longer count", "replica", owner, "requests", n)
		}
	}
	switch m.Op {
	case opRouted:
		if rt.AddRemote(owner, m.ID, core.Worker{ID: m.Worker, DPRank: m.Rank}, m.Prefill, m.Blocks) {
			p.stats.RemoteRouted.Add(1)
		}
	case opPrefillDone:
		rt.PrefillDoneRemote(owner, m.ID)
	case opFreed:
		rt.FreeRemote(owner, m.ID)
	}
}

// heartbeatLoop announces this replica and expires the requests of
// replicas silent for ReplicaTimeout.
func (p *Plane) heartbeatLoop() {
	t := time.NewTicker(p.opts.HeartbeatInterval)
	defer t.Stop()
	for {
		p.sendLoad(&loadMsg{Op: opHeartbeat, Replica: p.opts.ReplicaID, Instance: p.instance})
		p.sendFleet(&fleetMsg{Op: fleetHoldings, Replica: p.opts.ReplicaID, Workers: p.wants(), Conns: p.heldConns()})
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		var gone []string
		p.peersMu.Lock()
		for name, pr := range p.peers {
			if now.Sub(pr.seen) > p.opts.ReplicaTimeout {
				gone = append(gone, name)
				delete(p.peers, name)
			}
		}
		p.peersMu.Unlock()
		rt := p.rt.Load()
		for _, name := range gone {
			n := 0
			if rt != nil {
				n = rt.ExpireOwner(name)
			}
			p.stats.RemoteExpired.Add(uint64(n))
			p.log.Warn("kvrouter: a replica stopped sending heartbeats; its requests no longer count",
				"replica", name, "silent_for", p.opts.ReplicaTimeout.String(), "requests", n)
		}
	}
}

// Peers lists the replicas heard from within ReplicaTimeout.
func (p *Plane) Peers() []string {
	p.peersMu.Lock()
	defer p.peersMu.Unlock()
	out := make([]string, 0, len(p.peers))
	for name := range p.peers {
		out = append(out, name)
	}
	return out
}

// sayBye tells the others this replica's requests are gone.
func (p *Plane) sayBye() {
	if p.nc == nil {
		return
	}
	p.sendLoad(&loadMsg{Op: opBye, Replica: p.opts.ReplicaID, Instance: p.instance})
	_ = p.nc.FlushTimeout(time.Second)
}
