package eventplane

import (
	"context"
	"encoding/binary"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/ingest"
	"github.com/kvhash/kvhash/router/ingest/ingesttest"
	"github.com/kvhash/kvhash/router/route"
)

const testBlockSize = 16

// testEngine is a vLLM-like publisher on loopback: a PUB socket sending
// ingesttest's payloads with seqs from 0, and a ROUTER replay endpoint
// answering from everything it sent.
type testEngine struct {
	t        testing.TB
	worker   uint64
	pub      *ingesttest.Publisher
	replay   zmq4.Socket
	pubEP    string
	replayEP string
	gen      *ingesttest.Generator
	cancel   context.CancelFunc
	done     sync.WaitGroup

	mu   sync.Mutex
	sent [][]byte
}

func newTestEngine(t testing.TB, worker uint64) *testEngine {
	t.Helper()
	return newTestEngineSized(t, worker, 2, 4)
}

// newTestEngineSized sends batches of events stores of blocks blocks.
func newTestEngineSized(t testing.TB, worker uint64, events, blocks int) *testEngine {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	quiet := zmq4.WithLogger(slog.NewLogLogger(slog.DiscardHandler, slog.LevelError))
	e := &testEngine{t: t, worker: worker, cancel: cancel,
		pub: ingesttest.NewPublisher(t), replay: zmq4.NewRouter(ctx, quiet)}
	spec := ingesttest.DefaultSpec(ingesttest.MapEvents)
	spec.Seed, spec.Events, spec.BlocksPerEvent = worker, events, blocks
	e.gen = ingesttest.NewGenerator(spec)
	e.pubEP = e.pub.Listen("tcp://127.0.0.1:0")
	require.NoError(t, e.replay.Listen("tcp://127.0.0.1:0"))
	e.replayEP = "tcp://" + e.replay.Addr().String()
	e.done.Add(1)
	go e.serveReplay()
	t.Cleanup(e.close)
	return e
}

func (e *testEngine) close() {
	e.cancel()
	e.pub.Close()
	_ = e.replay.Close()
	e.done.Wait()
}

func seq8(n uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	return b[:]
}

// serveReplay answers [id, "", seq] with every batch from seq, then the
// end marker (vLLM's 4-frame shape).
func (e *testEngine) serveReplay() {
	defer e.done.Done()
	for {
		msg, err := e.replay.Recv()
		if err != nil {
			return
		}
		if len(msg.Frames) != 3 || len(msg.Frames[2]) != 8 {
			continue
		}
		id, from := msg.Frames[0], binary.BigEndian.Uint64(msg.Frames[2])
		e.mu.Lock()
		sent := e.sent
		e.mu.Unlock()
		for s := from; s < uint64(len(sent)); s++ {
			_ = e.replay.SendMulti(zmq4.NewMsgFrom(id, []byte{}, []byte{}, seq8(s), sent[s]))
		}
		_ = e.replay.SendMulti(zmq4.NewMsgFrom(id, []byte{}, []byte{}, seq8(^uint64(0)), []byte{}))
	}
}

// subscribed reports whether some SUB socket listens to the engine.
func (e *testEngine) subscribed() bool {
	return e.pub.Subscribed()
}

// send publishes n more batches.
func (e *testEngine) send(n int) {
	for range n {
		payload := e.gen.Next()
		e.mu.Lock()
		seq := uint64(len(e.sent))
		e.sent = append(e.sent, payload)
		e.mu.Unlock()
		e.pub.Send("", seq, payload)
	}
}

// lastSeq is the seq of the last batch sent.
func (e *testEngine) lastSeq() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return uint64(len(e.sent)) - 1
}

// rootPrompt is the token ids of the engine's first stored event that
// starts at the root: a prompt whose blocks the engine holds.
func (e *testEngine) rootPrompt() []uint32 {
	e.mu.Lock()
	defer e.mu.Unlock()
	dec := ingest.NewDecoder()
	for s, payload := range e.sent {
		b, _, err := dec.DecodeBatch("", uint64(s), payload)
		require.NoError(e.t, err)
		for _, ev := range b.Events {
			if ev.Kind == ingest.BlockStored && ev.ParentHash == nil {
				return ev.TokenIDs
			}
		}
	}
	e.t.Fatal("no root store sent")
	return nil
}

func (e *testEngine) spec() indexer.WorkerSpec {
	return indexer.WorkerSpec{WorkerID: e.worker, Model: "org/model-a", Endpoint: e.pubEP, ReplayEndpoint: e.replayEP, DPSize: 1}
}

// replica is one kvrouter replica without HTTP: indexer, router, plane.
type replica struct {
	t     testing.TB
	id    string
	ix    *indexer.Indexer
	rt    *route.Router
	plane *Plane
}

type fleet struct {
	t       testing.TB
	url     string
	engines []*testEngine
	opts    Options
	started []*replica
}

// waitFor caps every wait on a replica or an engine: generous, for a
// loaded 2-core CI machine running -race packages in parallel (a wait
// ends as soon as its condition holds).
const waitFor = 30 * time.Second

// testOptions keep the lease TTL and replica timeout well above what a
// loaded machine can stall a renewal or a heartbeat for: a lease that
// expires under a live holder, or a live peer taken for dead, is a
// leadership change the tests assert never happens unless they kill a
// replica. Takeover waits are bounded by waitFor, far above both.
func testOptions(url string) Options {
	return Options{
		URL: url, LeaseTTL: 5 * time.Second, HeartbeatInterval: 200 * time.Millisecond,
		ReplicaTimeout: 5 * time.Second, SnapshotInterval: -1,
	}
}

func newFleet(t testing.TB, url string, engines int) *fleet {
	f := &fleet{t: t, url: url, opts: testOptions(url)}
	for i := range engines {
		f.engines = append(f.engines, newTestEngine(t, uint64(i+1)))
	}
	return f
}

// start runs a replica over the fleet's NATS and subscribes it to every
// engine (each engine is ingested by whichever replica takes its lease).
func (f *fleet) start(id string, loadSync bool) *replica {
	t := f.t
	ix, err := indexer.New(indexer.Options{BlockSize: testBlockSize})
	require.NoError(t, err)
	rt, err := route.New(ix, route.Options{Seed: 7})
	require.NoError(t, err)
	opts := f.opts
	opts.ReplicaID = id
	if testing.Verbose() && os.Getenv("EVENTPLANE_LOG") != "" {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	p, err := New(opts, ix)
	require.NoError(t, err)
	if loadSync {
		p.AttachRouter(rt)
	}
	for _, e := range f.engines {
		spec := e.spec()
		_, err := ix.AddWorker(spec)
		require.NoError(t, err)
		_, err = p.Subscribe(ingest.Subscription{Model: spec.Model, WorkerID: spec.WorkerID, Endpoint: spec.Endpoint,
			ReplayEndpoint: spec.ReplayEndpoint, DPSize: 1})
		require.NoError(t, err)
	}
	r := &replica{t: t, id: id, ix: ix, rt: rt, plane: p}
	f.started = append(f.started, r)
	t.Cleanup(func() { _ = p.Close() })
	return r
}

// waitSubscribed waits until every engine has a subscriber (PUB drops
// what it sends before).
func (f *fleet) waitSubscribed() {
	f.waitSpread()
	for _, e := range f.engines {
		require.Eventually(f.t, e.subscribed, waitFor, 10*time.Millisecond, "engine %d: no subscriber", e.worker)
	}
}

// live lists the replicas started and neither killed nor closed.
func (f *fleet) live() []*replica {
	var out []*replica
	for _, r := range f.started {
		r.plane.closeMu.Lock()
		closed := r.plane.isClosed
		r.plane.closeMu.Unlock()
		if !closed {
			out = append(out, r)
		}
	}
	return out
}

// waitSpread waits until the live replicas hear each other and each
// engine is held by its preferred replica (spread.go): no hand-over is
// left to race what the test sends next.
func (f *fleet) waitSpread() {
	f.t.Helper()
	require.Eventually(f.t, func() bool {
		live := f.live()
		for _, r := range live {
			if len(r.plane.Peers()) != len(live)-1 {
				return false
			}
		}
		for _, e := range f.engines {
			n := 0
			for _, r := range live {
				if r.plane.holds(e.worker) {
					if r.plane.preferred(e.worker) != r.id {
						return false
					}
					n++
				}
			}
			if n != 1 {
				return false
			}
		}
		return true
	}, waitFor, 10*time.Millisecond, "the leases never settled on their preferred replicas")
}

// waitApplied waits until every replica applied each engine's last seq.
func (f *fleet) waitApplied(rs ...*replica) {
	f.t.Helper()
	for _, r := range rs {
		for _, e := range f.engines {
			want := e.lastSeq()
			require.Eventually(f.t, func() bool {
				w, ok := r.ix.Worker(e.worker)
				return ok && len(w.Ranks) > 0 && w.Ranks[0].HaveSeq && w.Ranks[0].LastSeq == want
			}, waitFor, 10*time.Millisecond, "replica %s: engine %d never reached seq %d", r.id, e.worker, want)
		}
	}
}

// holder returns the replica ingesting engine e, waiting for one.
func (f *fleet) holder(e *testEngine, rs ...*replica) *replica {
	var h *replica
	require.Eventually(f.t, func() bool {
		for _, r := range rs {
			for _, w := range r.plane.Holding() {
				if w == e.worker {
					h = r
					return true
				}
			}
		}
		return false
	}, waitFor, 10*time.Millisecond, "nobody holds engine %d", e.worker)
	return h
}

// exported is a replica's index without the parts that are per process
// (timestamps live in ranks' state, not in Saved).
func exported(r *replica) indexer.Saved { return r.ix.Export() }

func waitReady(t *testing.T, r *replica, want bool) {
	t.Helper()
	require.Eventually(t, func() bool { ok, _ := r.plane.Ready(); return ok == want }, waitFor, 20*time.Millisecond,
		"replica %s: ready never became %v", r.id, want)
}

func embedded(t testing.TB) *Embedded {
	t.Helper()
	e, err := StartEmbedded(t.TempDir(), 0)
	require.NoError(t, err)
	t.Cleanup(e.Shutdown)
	return e
}
