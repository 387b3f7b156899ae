package eventplane

import (
	"github.com/kvhash/kvhash/router/ingest"
)

// Whether an engine's stream is connected is known only to the replica
// that ingests it. Its connects and disconnects go on the stream, but a
// replica that restored a snapshot taken after them, or that missed the
// last one when a holder died, would report another view than the
// holder's. So each holder's holdings message (fleet.go, sent with every
// heartbeat) carries its view of the ranks it ingests, and every other
// replica takes it.

// connState is one rank's connection as its holder sees it.
type connState struct {
	_msgpack struct{} `msgpack:",as_array"`

	Worker uint64
	Rank   uint32
	Up     bool
}

// heldConns is this replica's view of the ranks it ingests.
func (p *Plane) heldConns() []connState {
	var out []connState
	for _, ss := range p.sub.Stats().Sources() {
		if p.holds(ss.Source.WorkerID) {
			out = append(out, connState{Worker: ss.Source.WorkerID, Rank: ss.Source.DPRank, Up: ss.Connected.Load()})
		}
	}
	return out
}

// takeHolderView sets the index's connected flags to a holder's view
// (never for an engine this replica ingests itself: its own view is the
// holder's).
func (p *Plane) takeHolderView(conns []connState) {
	for _, c := range conns {
		if p.holds(c.Worker) {
			continue
		}
		info, ok := p.ix.Worker(c.Worker)
		if !ok {
			continue
		}
		for _, ri := range info.Ranks {
			if ri.Worker.DPRank != c.Rank || ri.Connected == c.Up {
				continue
			}
			kind := ingest.StreamDisconnected
			if c.Up {
				kind = ingest.StreamConnected
			}
			ep, _ := ingest.RankEndpoint(info.Spec.Endpoint, c.Rank) // "" when unusable: the rank is found by id
			p.ix.HandleStream(ingest.Source{Model: info.Spec.Model, WorkerID: c.Worker, DPRank: c.Rank, Endpoint: ep}, ingest.StreamEvent{Kind: kind})
		}
	}
}
