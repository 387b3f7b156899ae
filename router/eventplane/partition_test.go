package eventplane

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/ingest"
)

// TestPartitionsApplyAndIngestOnlyTheirModels: two partitions of one
// fleet on one NATS, one model each. Each replica's index holds only its
// models' engines, exactly; it ingests only their engines, says ready by
// its models' messages alone, and restores only its partition's
// snapshots.
func TestPartitionsApplyAndIngestOnlyTheirModels(t *testing.T) {
	nats := embedded(t)
	f := newFleet(t, nats.URL(), 4)
	models := map[uint64]string{1: "org/model-a", 2: "org/model-a", 3: "org/model-b", 4: "org/model-b"}
	specOf := func(e *testEngine) indexer.WorkerSpec {
		s := e.spec()
		s.Model = models[e.worker]
		return s
	}
	start := func(id, model string) *replica {
		ix, err := indexer.New(indexer.Options{BlockSize: testBlockSize})
		require.NoError(t, err)
		opts := f.opts
		opts.ReplicaID, opts.Models = id, []string{model}
		p, err := New(opts, ix)
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Close() })
		for _, e := range f.engines { // every replica is asked for every engine, as with one config file
			s := specOf(e)
			if s.Model == model {
				_, err := ix.AddWorker(s)
				require.NoError(t, err)
			}
			_, err := p.Subscribe(ingest.Subscription{Model: s.Model, WorkerID: s.WorkerID, Endpoint: s.Endpoint,
				ReplayEndpoint: s.ReplayEndpoint, DPSize: 1})
			require.NoError(t, err)
		}
		r := &replica{t: t, id: id, ix: ix, plane: p}
		f.started = append(f.started, r)
		return r
	}
	a, b := start("a", "org/model-a"), start("b", "org/model-b")
	for _, e := range f.engines {
		require.Eventually(t, e.subscribed, waitFor, 10*time.Millisecond, "engine %d: no subscriber", e.worker)
	}
	for _, e := range f.engines {
		e.send(10)
	}
	for r, engines := range map[*replica][]*testEngine{a: f.engines[:2], b: f.engines[2:]} {
		want := referenceOf(t, specOf, engines...)
		require.Eventually(t, func() bool {
			ok, _ := r.plane.Ready()
			return ok && assert.ObjectsAreEqual(want, exported(r))
		}, waitFor, 20*time.Millisecond, "replica %s never held exactly its models' engines", r.id)
		held := r.plane.Holding()
		assert.ElementsMatch(t, []uint64{engines[0].worker, engines[1].worker}, held, "replica %s ingests other models", r.id)
	}

	// a's snapshot is of model-a only: a new replica of model-b never
	// restores it.
	require.NoError(t, a.plane.WriteSnapshot())
	b2 := start("b2", "org/model-b")
	for _, e := range f.engines[2:] {
		e.send(2)
	}
	want := referenceOf(t, specOf, f.engines[2:]...)
	require.Eventually(t, func() bool {
		ok, _ := b2.plane.Ready()
		return ok && assert.ObjectsAreEqual(want, exported(b2))
	}, waitFor, 20*time.Millisecond, "the new model-b replica does not hold exactly model-b's engines")
}

// referenceOf is reference with each engine's spec from specOf.
func referenceOf(t *testing.T, specOf func(*testEngine) indexer.WorkerSpec, engines ...*testEngine) indexer.Saved {
	ix, err := indexer.New(indexer.Options{BlockSize: testBlockSize})
	require.NoError(t, err)
	for _, e := range engines {
		spec := specOf(e)
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
