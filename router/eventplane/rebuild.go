package eventplane

import (
	"time"
)

// A replica whose index has a hole the stream can no longer fill (the
// messages after its snapshot aged out) cannot rebuild the engines it
// does not ingest by itself: their holders must. It asks them on the
// fleet subject (fleetRebuild, with the engines: fleet.go) every lease TTL until
// it has applied each engine's restart marker; a holder asked publishes
// the markers and has the engine replay everything from seq 0 (as after
// a stream reset, reset.go). Every replica clears and rebuilds those
// engines at the marker, so they stay the same.

// askRebuilds asks the holders for the engines still to rebuild, at most
// once per lease TTL (readinessLoop calls it on each tick).
func (p *Plane) askRebuilds() {
	if time.Since(p.lastRebuildRq) < p.opts.LeaseTTL {
		return
	}
	var workers []uint64
	for _, l := range p.leaseList() {
		if l.rebuild.Load() && !l.held.Load() {
			workers = append(workers, l.sub.WorkerID)
		}
	}
	if len(workers) == 0 {
		return
	}
	p.lastRebuildRq = time.Now()
	p.log.Info("kvrouter: asking the holders to rebuild engines from the engines", "workers", len(workers))
	p.sendFleet(&fleetMsg{Op: fleetRebuild, Replica: p.opts.ReplicaID, Workers: workers})
}

// onRebuildRequest rebuilds the engines asked for that this replica
// holds, unless it published their markers within the last lease TTL
// (the asker repeats until it has applied them).
func (p *Plane) onRebuildRequest(from string, workers []uint64) {
	n := 0
	for _, w := range workers {
		p.leaseMu.Lock()
		l := p.leases[w]
		p.leaseMu.Unlock()
		if l == nil || !l.held.Load() {
			continue
		}
		l.mu.Lock()
		if l.held.Load() && time.Since(l.markedAt) >= p.opts.LeaseTTL && !l.rebuild.Swap(true) {
			n++ // tend rebuilds it (lease.go)
		}
		l.mu.Unlock()
	}
	if n > 0 {
		p.log.Info("kvrouter: rebuilding engines from the engines at another replica's request", "replica", from, "workers", n)
		p.kickLeases()
	}
}
