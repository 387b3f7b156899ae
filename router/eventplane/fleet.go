package eventplane

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/kvhash/kvhash/router/internal/msgpackcheck"
)

// Fleet messages go on <prefix>.fleet.<replica>, NATS core, beside the
// load-sync subject and apart from it, so that replicas of an earlier
// build (which know only load sync) are not disturbed by them:
//
//   - holdings, with each heartbeat: the workers the replica registered
//     (spread.go: an engine is handed over only to a replica that can
//     ingest it) and, for those it ingests, whether their streams are
//     connected (connected.go);
//   - rebuild: the holders of these workers' engines are asked to
//     rebuild them from the engines (rebuild.go).
type fleetOp uint8

const (
	fleetHoldings fleetOp = 1
	fleetRebuild  fleetOp = 2
)

// fleetMsg is one fleet message. Version byte first, then MessagePack.
type fleetMsg struct {
	_msgpack struct{} `msgpack:",as_array"`

	Op      fleetOp
	Replica string
	Workers []uint64
	Conns   []connState
}

// maxFleetWorkers bounds what one message may name (a fleet of a few
// thousand engines; more is malformed).
const maxFleetWorkers = 1 << 20

func encodeFleet(m *fleetMsg) ([]byte, error) {
	body, err := msgpack.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("eventplane: encode fleet message: %w", err)
	}
	return append([]byte{WireVersion}, body...), nil
}

// decodeFleet reads one fleet message; bad input is an error.
func decodeFleet(data []byte) (m fleetMsg, err error) {
	defer func() {
		if r := recover(); r != nil {
			m, err = fleetMsg{}, fmt.Errorf("%w: fleet message decoder panic: %v", ErrMalformed, r)
		}
	}()
	if len(data) == 0 || data[0] != WireVersion {
		return m, fmt.Errorf("%w: fleet message version", ErrVersion)
	}
	if err := msgpackcheck.Lengths(data[1:]); err != nil {
		return fleetMsg{}, fmt.Errorf("%w: fleet message: %w", ErrMalformed, err)
	}
	if err := msgpack.Unmarshal(data[1:], &m); err != nil {
		return fleetMsg{}, fmt.Errorf("%w: fleet message: %w", ErrMalformed, err)
	}
	switch {
	case m.Replica == "":
		return fleetMsg{}, fmt.Errorf("%w: fleet message without a replica", ErrMalformed)
	case m.Op != fleetHoldings && m.Op != fleetRebuild:
		return fleetMsg{}, fmt.Errorf("%w: fleet message op %d", ErrMalformed, m.Op)
	case len(m.Workers) > maxFleetWorkers || len(m.Conns) > maxFleetWorkers:
		return fleetMsg{}, fmt.Errorf("%w: fleet message names %d workers", ErrMalformed, max(len(m.Workers), len(m.Conns)))
	}
	return m, nil
}

func (o *Options) fleetSubject(replica string) string { return o.Prefix + ".fleet." + replica }

// sendFleet publishes without waiting: NATS buffers while reconnecting.
func (p *Plane) sendFleet(m *fleetMsg) {
	data, err := encodeFleet(m)
	if err != nil {
		return
	}
	_ = p.nc.Publish(p.opts.fleetSubject(p.opts.ReplicaID), data)
}

// peerHoldings is what another replica's last holdings message said.
type peerHoldings struct {
	wants map[uint64]struct{}
	seen  time.Time
}

func (p *Plane) startFleetSync() error {
	sub, err := p.nc.Subscribe(p.opts.fleetSubject("*"), func(msg *nats.Msg) {
		m, err := decodeFleet(msg.Data)
		if err != nil {
			p.log.Warn("kvrouter: fleet message skipped", "subject", msg.Subject, "error", err.Error())
			return
		}
		p.onFleet(&m)
	})
	if err != nil {
		return fmt.Errorf("eventplane: fleet sync: %w", err)
	}
	p.fleetSub = sub
	return nil
}

func (p *Plane) onFleet(m *fleetMsg) {
	if m.Replica == p.opts.ReplicaID {
		return
	}
	switch m.Op {
	case fleetHoldings:
		p.peersMu.Lock()
		p.holdings[m.Replica] = &peerHoldings{wants: wantSet(m.Workers), seen: time.Now()}
		p.peersMu.Unlock()
		p.takeHolderView(m.Conns)
	case fleetRebuild:
		p.onRebuildRequest(m.Replica, m.Workers)
	}
}
