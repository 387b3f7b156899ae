package eventplane

import (
	"encoding/binary"
	"hash/fnv"
	"slices"
	"time"
)

// Leases are spread over the live replicas by rendezvous hashing: each
// engine has a preferred replica, the one with the highest weight(worker,
// replica) among this replica and the peers whose holdings messages
// (fleet.go) say they registered the engine. The preferred replica takes
// a free lease at once; the others leave it to it for one TTL (then take
// it: the preferred one may be unable to). A holder that is not the preferred
// replica hands the engine over (releases its lease) as soon as it hears
// the preferred one, so a replica that joins takes its share, and a
// replica's crash moves only its own engines.

// weight is the rendezvous weight of a replica for an engine: the same on
// every replica, independent of the others.
func weight(worker uint64, replica string) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], worker)
	_, _ = h.Write(b[:])
	_, _ = h.Write([]byte(replica))
	return mix64(h.Sum64())
}

// mix64 spreads FNV's result over all 64 bits (a murmur3-style
// finalizer): FNV alone orders names that differ in their last byte the
// same way for every engine.
func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// preferred names the replica that should ingest worker, among this one
// and the live peers that registered it.
func (p *Plane) preferred(worker uint64) string {
	best, bw := p.opts.ReplicaID, weight(worker, p.opts.ReplicaID)
	// A replica that missed three heartbeats is likely gone: an engine is not
	// left to it while the others wait for the replica timeout.
	fresh := time.Now().Add(-3 * p.opts.HeartbeatInterval)
	p.peersMu.Lock()
	defer p.peersMu.Unlock()
	for name, h := range p.holdings {
		if _, ok := h.wants[worker]; !ok || h.seen.Before(fresh) {
			continue
		}
		if w := weight(worker, name); w > bw || w == bw && name > best {
			best, bw = name, w
		}
	}
	return best
}

// wants lists the workers this replica registered (its holdings message
// says so, fleet.go: an engine is handed over only to a replica that can
// ingest it).
func (p *Plane) wants() []uint64 {
	ls := p.leaseList()
	out := make([]uint64, 0, len(ls))
	for _, l := range ls {
		out = append(out, l.sub.WorkerID)
	}
	slices.Sort(out)
	return out
}

func wantSet(workers []uint64) map[uint64]struct{} {
	out := make(map[uint64]struct{}, len(workers))
	for _, w := range workers {
		out[w] = struct{}{}
	}
	return out
}
