package eventplane

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestLeasesSpreadOverTheReplicasAndMoveWhenOneJoins: the first replica
// takes every engine; as the others join, each engine is handed over to
// its rendezvous-preferred replica, without losing or doubling an event,
// and a replica's crash moves only its own engines.
func TestLeasesSpreadOverTheReplicasAndMoveWhenOneJoins(t *testing.T) {
	nats := embedded(t)
	const engines = 8
	f := newFleet(t, nats.URL(), engines)
	a := f.start("a", false)
	f.waitSubscribed()
	assert.Len(t, a.plane.Holding(), engines, "alone, a ingests every engine")
	for _, e := range f.engines {
		e.send(5)
	}
	f.waitApplied(a)

	b, c := f.start("b", false), f.start("c", false)
	f.waitSubscribed() // waits for the hand-overs to settle
	rs := []*replica{a, b, c}
	for _, r := range rs {
		held := len(r.plane.Holding())
		assert.Positive(t, held, "replica %s ingests nothing", r.id)
		assert.Less(t, held, engines, "replica %s ingests every engine", r.id)
	}
	for _, e := range f.engines {
		e.send(5)
	}
	f.waitApplied(rs...)
	want := reference(t, f.engines...)
	for _, r := range rs {
		assert.Equal(t, want, exported(r), "replica %s lost or doubled events across the hand-overs", r.id)
	}

	// c crashes: only its engines move, to a and b.
	before := map[string][]uint64{"a": a.plane.Holding(), "b": b.plane.Holding()}
	c.plane.kill()
	f.waitSubscribed()
	for _, r := range []*replica{a, b} {
		assert.Subset(t, r.plane.Holding(), before[r.id], "replica %s lost an engine it held when c crashed", r.id)
	}
	assert.Len(t, append(a.plane.Holding(), b.plane.Holding()...), engines)
}
