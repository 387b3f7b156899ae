package eventplane

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/ingest"
	"github.com/kvhash/kvhash/router/route"
)

// holders counts, per engine, the replicas ingesting it.
func holders(rs ...*replica) map[uint64]int {
	out := map[uint64]int{}
	for _, r := range rs {
		for _, w := range r.plane.Holding() {
			out[w]++
		}
	}
	return out
}

func TestThreeReplicasHoldTheSameIndexAndAnswerTheSameRoutes(t *testing.T) {
	nats := embedded(t)
	f := newFleet(t, nats.URL(), 2)
	a, b, c := f.start("a", false), f.start("b", false), f.start("c", false)
	f.waitSubscribed()
	for _, e := range f.engines {
		e.send(20)
	}
	f.waitApplied(a, b, c)

	want := exported(a)
	require.Len(t, want.Workers, 2)
	assert.Equal(t, want, exported(b), "replica b's index differs from a's")
	assert.Equal(t, want, exported(c), "replica c's index differs from a's")
	assert.Equal(t, map[uint64]int{1: 1, 2: 1}, holders(a, b, c), "each engine is ingested by exactly one replica")
	for _, r := range []*replica{a, b, c} {
		assert.Zero(t, r.plane.Stats().Malformed.Load())
		assert.Zero(t, r.plane.Stats().Duplicates.Load(), "no leadership change: nothing to de-duplicate")
	}

	for _, e := range f.engines {
		prompt := e.rootPrompt()
		var first route.Decision
		for i, r := range []*replica{a, b, c} {
			d, err := r.rt.Route(route.Request{Model: "org/model-a", TokenIDs: prompt})
			require.NoError(t, err)
			require.Positive(t, d.OverlapBlocks, "replica %s: the engine's own prompt has no overlap", r.id)
			if i == 0 {
				first = d
				continue
			}
			assert.Equal(t, first.WorkerID, d.WorkerID, "replica %s routes elsewhere", r.id)
			assert.Equal(t, first.OverlapBlocks, d.OverlapBlocks)
			assert.Equal(t, first.Cost, d.Cost)
		}
	}
}

func TestRestartedReplicaCatchesUpFromSnapshotAndStream(t *testing.T) {
	nats := embedded(t)
	f := newFleet(t, nats.URL(), 1)
	a := f.start("a", false) // first: it takes the engine's lease
	b := f.start("b", false)
	f.waitSubscribed()
	e := f.engines[0]
	e.send(10)
	f.waitApplied(a, b)
	require.NoError(t, b.plane.WriteSnapshot())
	snapSeq := b.plane.appliedSeq.Load()
	e.send(10)
	f.waitApplied(a, b)
	b.plane.kill()
	e.send(10)
	f.waitApplied(a)

	b2 := f.start("b", false)
	f.waitApplied(b2)
	waitReady(t, b2, true)
	assert.Equal(t, exported(a), exported(b2), "the restarted replica's index differs")
	total := a.plane.appliedSeq.Load()
	assert.Equal(t, total-snapSeq, b2.plane.Stats().Applied.Load(),
		"the restarted replica applies exactly the stream after its snapshot: nothing twice, nothing lost")
	assert.Zero(t, b2.plane.Stats().Duplicates.Load())
}

// reference applies every batch an engine sent straight to a fresh
// indexer: what a single router that lost nothing holds.
func reference(t *testing.T, engines ...*testEngine) indexer.Saved {
	ix, err := indexer.New(indexer.Options{BlockSize: testBlockSize})
	require.NoError(t, err)
	for _, e := range engines {
		spec := e.spec()
		_, err := ix.AddWorker(spec)
		require.NoError(t, err)
		src := ingest.Source{Model: spec.Model, WorkerID: spec.WorkerID, Endpoint: spec.Endpoint}
		dec := ingest.NewDecoder()
		e.mu.Lock()
		for s, payload := range e.sent {
			b, _, err := dec.DecodeBatch("", uint64(s), payload)
			require.NoError(t, err)
			ix.HandleBatch(src, b)
		}
		e.mu.Unlock()
	}
	return ix.Export()
}

func TestIngestingReplicaDiesAndAnotherTakesOverWithoutLosingEvents(t *testing.T) {
	nats := embedded(t)
	f := newFleet(t, nats.URL(), 2)
	rs := []*replica{f.start("a", false), f.start("b", false), f.start("c", false)}
	f.waitSubscribed()
	for _, e := range f.engines {
		e.send(10)
	}
	f.waitApplied(rs...)
	dead := f.holder(f.engines[0], rs...)
	orphans := dead.plane.Holding() // engine 1, and maybe engine 2
	dead.plane.kill()
	for _, w := range orphans {
		e := f.engines[w-1]
		require.Eventually(t, func() bool { return !e.subscribed() }, waitFor, 10*time.Millisecond,
			"engine %d: the dead replica's subscription never went away", w)
	}
	// Sent while nobody ingests the dead replica's engines (their leases
	// have not expired yet): the new holders get them from the engines'
	// replay endpoints.
	for _, e := range f.engines {
		e.send(10)
	}
	var alive []*replica
	for _, r := range rs {
		if r != dead {
			alive = append(alive, r)
		}
	}
	for _, e := range f.engines {
		h := f.holder(e, alive...)
		assert.NotSame(t, dead, h)
	}
	// Sent once the new holders subscribe: a PUB socket drops what it
	// sends before, and with no later batch to show the gap nobody would
	// ask the engine for those again.
	f.waitSubscribed()
	for _, e := range f.engines {
		e.send(5)
	}
	f.waitApplied(alive...)
	want := reference(t, f.engines...)
	for _, r := range alive {
		assert.Equal(t, want, exported(r), "replica %s lost or doubled events", r.id)
	}
	assert.Equal(t, map[uint64]int{1: 1, 2: 1}, holders(alive...))
}

func TestReplicaCutOffFromNATSIsNotReadyAndRecovers(t *testing.T) {
	dir := t.TempDir()
	nats, err := StartEmbedded(dir, 0)
	require.NoError(t, err)
	f := newFleet(t, nats.URL(), 1)
	a := f.start("a", false)
	f.waitSubscribed()
	e := f.engines[0]
	e.send(5)
	f.waitApplied(a)
	waitReady(t, a, true)

	nats.Shutdown()
	waitReady(t, a, false)
	_, why := a.plane.Ready()
	assert.Contains(t, why, "NATS")
	e.send(5) // while cut off: held in ingest's queue, or replayed later

	nats, err = StartEmbedded(dir, nats.Port())
	require.NoError(t, err)
	t.Cleanup(nats.Shutdown)
	waitReady(t, a, true)
	e.send(5)
	f.waitApplied(a)
	assert.Equal(t, reference(t, e), exported(a))
}

func TestLoadSyncChangesTheSecondReplicasChoice(t *testing.T) {
	nats := embedded(t)
	f := newFleet(t, nats.URL(), 2)
	a, b := f.start("a", true), f.start("b", true)
	require.Eventually(t, func() bool { return len(a.plane.Peers()) == 1 && len(b.plane.Peers()) == 1 },
		waitFor, 10*time.Millisecond, "the replicas never heard each other")

	long := make([]uint32, 64*testBlockSize)
	for i := range long {
		long[i] = uint32(500000 + i)
	}
	first, err := a.rt.Route(route.Request{Model: "org/model-a", TokenIDs: long, RequestID: "big"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return b.rt.Stats().ActiveRequests == 1 }, waitFor, 5*time.Millisecond,
		"replica b never saw a's request")

	short := make([]uint32, 4*testBlockSize)
	for i := range short {
		short[i] = uint32(900000 + i)
	}
	d, err := b.rt.Route(route.Request{Model: "org/model-a", TokenIDs: short, RequestID: "small"})
	require.NoError(t, err)
	assert.NotEqual(t, first.WorkerID, d.WorkerID, "b routed onto a's loaded worker: it does not see a's load")
	for _, c := range d.Candidates {
		if c.WorkerID == first.WorkerID {
			assert.Positive(t, c.DecodeBlocks-uint64(len(short)/testBlockSize), "a's request's blocks count on its worker")
		}
	}

	// Freed on a: gone on b too (b's own request stays). b's request
	// reaches a over NATS too: wait on each replica asserted on.
	require.True(t, a.rt.Free("big"))
	require.Eventually(t, func() bool { return b.rt.Stats().ActiveRequests == 1 }, waitFor, 5*time.Millisecond,
		"b still counts a's freed request")
	require.Eventually(t, func() bool { return a.rt.Stats().ActiveRequests == 1 }, waitFor, 5*time.Millisecond,
		"a sees b's request (its own is freed)")

	// A replica that vanishes: its requests expire on the others.
	_, err = a.rt.Route(route.Request{Model: "org/model-a", TokenIDs: long, RequestID: "big2"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return b.rt.Stats().ActiveRequests == 2 }, waitFor, 5*time.Millisecond,
		"replica b never saw a's second request")
	a.plane.kill()
	require.Eventually(t, func() bool { return b.rt.Stats().ActiveRequests == 1 }, waitFor, 10*time.Millisecond,
		"the vanished replica's request still counts")
	assert.Equal(t, uint64(1), b.plane.Stats().RemoteExpired.Load())
}

// TestSnapshotsTakenWhileApplyingRestoreExactly: snapshots are exported
// while the stream is applied on (the apply loop does not pause for
// them); a replica restoring one applies the stream after its sequence
// and ends with the engines' exact index, nothing lost or applied twice.
func TestSnapshotsTakenWhileApplyingRestoreExactly(t *testing.T) {
	nats := embedded(t)
	f := newFleet(t, nats.URL(), 2)
	require.Greater(t, weight(1, "a"), weight(1, "b"))
	a := f.start("a", false)
	f.waitSubscribed()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 40 {
			for _, e := range f.engines {
				e.send(1)
			}
		}
	}()
	for range 5 {
		require.NoError(t, a.plane.WriteSnapshot())
	}
	<-done
	f.waitApplied(a)
	b := f.start("b", false)
	f.waitSubscribed()
	for _, e := range f.engines {
		e.send(2)
	}
	f.waitApplied(a, b)
	want := reference(t, f.engines...)
	assert.Equal(t, want, exported(a))
	assert.Equal(t, want, exported(b), "the restored replica lost or doubled events")
}
