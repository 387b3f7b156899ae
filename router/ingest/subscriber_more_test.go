package ingest

import (
	"encoding/hex"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/internal/enginetest"
)

func hexFrames(frames ...[]byte) []string {
	out := make([]string, len(frames))
	for i, f := range frames {
		out[i] = hex.EncodeToString(f)
	}
	return out
}

func TestSubscriberSkipsMalformedMessagesAndGoesOn(t *testing.T) {
	e := enginetest.StartPublisher(t)
	rec := newRecorder()
	s := newTestSubscriber(t, rec)
	sub := openEngine(t, e, "e", 0, nil)
	subscribeReady(t, s, e, "e", sub)

	e.Send("e", batchOf(storedEv([]uint64{1}, nil, 0))) // seq 0
	rec.waitFor(t, "seq 0", func() bool { return len(rec.batches) == 1 })

	topic := []byte("kv")
	raw := func(frames ...[]byte) {
		e.Do(map[string]any{"op": "raw", "name": "e", "frames": hexFrames(frames...)})
	}
	raw(topic, seqBytes(1))                                                                                                         // 2 frames
	raw(topic, []byte{1, 2, 3}, []byte{0x90})                                                                                       // a 3-byte seq
	raw(topic, seqBytes(1), []byte{0xc1})                                                                                           // not MessagePack (0xc1 is never used)
	raw(topic, seqBytes(2), []byte{0x92, 0xcb})                                                                                     // truncated
	raw(topic, seqBytes(3), []byte{0x92, 0xa1, 'x', 0x90})                                                                          // ts is a string
	raw(topic, seqBytes(4), []byte{0x92, 0x00, 0x91, 0x91, 0xa3, 'F', 'o', 'o'})                                                    // unknown tag, alone
	raw(topic, seqBytes(5), []byte{0x92, 0x00, 0x91, 0x92, 0xab, 'B', 'l', 'o', 'c', 'k', 'S', 't', 'o', 'r', 'e', 'd', 0xa1, 'x'}) // wrong type
	e.Do(map[string]any{"op": "send", "name": "e", "seq": 6, "events": []map[string]any{storedEv([]uint64{2}, nil, 0)}})
	e.Do(map[string]any{"op": "send", "name": "e", "events": []map[string]any{
		{"type": "BlockMoved", "block_hashes": []uint64{9}}, {"type": "BlockRemoved", "block_hashes": []uint64{1}}}})

	rec.waitFor(t, "the batches after the bad ones", func() bool {
		return len(rec.batches) == 4 && rec.countLocked(StreamMalformed) == 8
	})
	// Seq 4 held only an unknown kind: delivered empty. Seq 7 lost only
	// its unknown event.
	assert.Equal(t, []uint64{0, 4, 6, 7}, rec.seqs())
	rec.mu.Lock()
	assert.Empty(t, rec.batches[1].b.Events)
	require.Len(t, rec.batches[3].b.Events, 1)
	assert.Equal(t, BlockRemoved, rec.batches[3].b.Events[0].Kind)
	rec.mu.Unlock()

	st := s.Stats()
	assert.Equal(t, uint64(1), st.Malformed(ReasonFrames))
	assert.Equal(t, uint64(1), st.Malformed(ReasonSeq))
	assert.Equal(t, uint64(2), st.Malformed(ReasonMsgpack))
	assert.Equal(t, uint64(2), st.Malformed(ReasonWrongType))
	assert.Equal(t, uint64(2), st.Malformed(ReasonUnknownTag))
	assert.Equal(t, uint64(2), st.UnknownEvents.Load())
	// Each undecodable batch with a seq is a lost seq: the index is told.
	var lost []string
	for _, ev := range rec.streamEvents(StreamGapLost) {
		lost = append(lost, strconv.FormatUint(ev.From, 10)+"-"+strconv.FormatUint(ev.To, 10))
	}
	assert.Equal(t, []string{"1-2", "2-3", "3-4", "5-6"}, lost)
	var where []string
	for _, ev := range rec.streamEvents(StreamMalformed) {
		where = append(where, ev.Err.Error())
	}
	assert.Contains(t, strings.Join(where, "\n"), "event 0: BlockStored.block_hashes: want an array, got string")
}

func TestSubscriberDataParallelRanksOnPortPlusRank(t *testing.T) {
	e := enginetest.StartPublisher(t)
	rec := newRecorder()
	s := newTestSubscriber(t, rec)
	port := enginetest.FreePorts(t, 2)
	rport := enginetest.FreePorts(t, 2)
	for r := range 2 {
		e.Do(map[string]any{"op": "open", "name": "r" + strconv.Itoa(r), "endpoint": enginetest.TCP(port + r),
			"replay": enginetest.TCP(rport + r), "topic": "kv"})
	}
	srcs, err := s.Subscribe(Subscription{Model: "m", WorkerID: 7, Endpoint: enginetest.TCP(port),
		ReplayEndpoint: enginetest.TCP(rport), DPSize: 2, Topic: "kv"})
	require.NoError(t, err)
	require.Len(t, srcs, 2)
	assert.Equal(t, enginetest.TCP(port+1), srcs[1].Endpoint)
	for r := range 2 {
		e.Do(map[string]any{"op": "wait_sub", "name": "r" + strconv.Itoa(r)})
	}
	e.Send("r0", map[string]any{"dp_rank": 0, "events": []map[string]any{storedEv([]uint64{100}, nil, 0)}})
	e.Send("r1", map[string]any{"dp_rank": 1, "events": []map[string]any{storedEv([]uint64{200}, nil, 0)}})
	// A gap on rank 1 only is replayed from rank 1's replay port.
	e.Send("r1", map[string]any{"skip": true, "dp_rank": 1, "events": []map[string]any{storedEv([]uint64{201}, nil, 0)}})
	e.Send("r1", map[string]any{"dp_rank": 1, "events": []map[string]any{storedEv([]uint64{202}, nil, 0)}})

	// (Seq 1 comes from the replay port either way: the stream's catch-up
	// at connect, or the gap the next live seq shows.)
	rec.waitFor(t, "4 batches", func() bool { return len(rec.batches) == 4 })
	rec.mu.Lock()
	defer rec.mu.Unlock()
	byRank := map[uint32][]uint64{}
	for _, b := range rec.batches {
		byRank[b.src.DPRank] = append(byRank[b.src.DPRank], b.b.Events[0].BlockHashes[0])
		if b.b.DPRank != nil {
			assert.Equal(t, b.src.DPRank, *b.b.DPRank)
		}
	}
	assert.Equal(t, map[uint32][]uint64{0: {100}, 1: {200, 201, 202}}, byRank)
	for _, st := range rec.streams {
		if st.ev.Kind == StreamGapReplayed {
			assert.Equal(t, uint32(1), st.src.DPRank)
		}
	}
}

func TestSubscriberBoundEndpointTakesTheSourceFromTheTopic(t *testing.T) {
	e := enginetest.StartPublisher(t)
	rec := newRecorder()
	s := newTestSubscriber(t, rec)
	pods := map[string]uint64{"10.0.0.1:8000": 1, "10.0.0.2:8000": 2}
	addr, err := s.Bind(Binding{
		Endpoint: "tcp://127.0.0.1:0",
		Topic:    "kv@",
		Resolve: func(topic string) (Source, bool) {
			pod, model, ok := ParseLLMDTopic(topic)
			id, known := pods[pod]
			if !ok || !known {
				return Source{}, false
			}
			return Source{Model: model, WorkerID: id}, true
		},
	})
	require.NoError(t, err)
	ep := "tcp://" + addr.String()
	for name, topic := range map[string]string{"a": "kv@10.0.0.1:8000@llama", "b": "kv@10.0.0.2:8000@qwen", "x": "kv@10.9.9.9:1@llama"} {
		e.Do(map[string]any{"op": "open", "name": name, "endpoint": ep, "bind": false, "topic": topic})
		e.Do(map[string]any{"op": "wait_sub", "name": name})
	}
	e.Send("a", batchOf(storedEv([]uint64{1}, nil, 0)))
	e.Send("b", batchOf(storedEv([]uint64{2}, nil, 0)))
	e.Send("x", batchOf(storedEv([]uint64{3}, nil, 0)))
	e.Send("a", batchOf(storedEv([]uint64{4}, nil, 0)))

	rec.waitFor(t, "3 batches", func() bool { return len(rec.batches) == 3 })
	require.Eventually(t, func() bool { return s.Stats().Malformed(ReasonUnknownTopic) == 1 }, 5*time.Second, 10*time.Millisecond)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	got := map[string][]uint64{}
	for _, b := range rec.batches {
		key := b.src.Model + "/" + strconv.FormatUint(b.src.WorkerID, 10) + "/" + b.src.Topic
		got[key] = append(got[key], b.b.Seq)
	}
	assert.Equal(t, map[string][]uint64{
		"llama/1/kv@10.0.0.1:8000@llama": {0, 1},
		"qwen/2/kv@10.0.0.2:8000@qwen":   {0},
	}, got)
	assert.Equal(t, 2, rec.countLocked(StreamConnected))
}

func TestSubscriberRequestReplayDeliversAgain(t *testing.T) {
	e := enginetest.StartPublisher(t)
	rec := newRecorder()
	s := newTestSubscriber(t, rec)
	sub := openEngine(t, e, "e", 4, nil)
	subscribeReady(t, s, e, "e", sub)
	for i := range 3 {
		e.Send("e", batchOf(storedEv([]uint64{uint64(i + 1)}, nil, 0)))
	}
	rec.waitFor(t, "3 batches", func() bool { return len(rec.batches) == 3 })
	src := Source{Model: "m", WorkerID: 1}
	require.NoError(t, s.RequestReplay(src, 1))
	rec.waitFor(t, "seqs 1 and 2 again", func() bool { return len(rec.batches) == 5 && rec.countLocked(StreamGapReplayed) == 1 })
	assert.Equal(t, []uint64{0, 1, 2, 1, 2}, rec.seqs())
	assert.Equal(t, StreamEvent{Kind: StreamGapReplayed, From: 1, To: 3}, rec.streamEvents(StreamGapReplayed)[0])

	// Live messages go on after it, not taken for a restart.
	e.Send("e", batchOf(storedEv([]uint64{9}, nil, 0)))
	rec.waitFor(t, "seq 3", func() bool { return len(rec.batches) == 6 })
	assert.Zero(t, s.Stats().Restarts.Load())

	require.Error(t, s.RequestReplay(Source{Model: "m", WorkerID: 99}, 0), "not subscribed")
}

func TestSubscriberResumesFromASnapshotSeq(t *testing.T) {
	e := enginetest.StartPublisher(t)
	rec := newRecorder()
	s := newTestSubscriber(t, rec)
	sub := openEngine(t, e, "e", 3, nil)
	// The engine ran before the router: seqs 0..4, all in its buffer.
	for i := range 5 {
		e.Send("e", map[string]any{"skip": true, "events": []map[string]any{storedEv([]uint64{uint64(i + 1)}, nil, 0)}})
	}
	// The router's snapshot holds up to seq 2: it asks from 3.
	sub.ResumeAfter = map[uint32]uint64{0: 2}
	subscribeReady(t, s, e, "e", sub)
	rec.waitFor(t, "seqs 3 and 4 replayed", func() bool { return len(rec.batches) == 2 && rec.countLocked(StreamGapReplayed) == 1 })
	e.Send("e", batchOf(storedEv([]uint64{6}, nil, 0)))
	rec.waitFor(t, "seq 5 live", func() bool { return len(rec.batches) == 3 })
	assert.Equal(t, []uint64{3, 4, 5}, rec.seqs())
	assert.Equal(t, StreamEvent{Kind: StreamGapReplayed, From: 3, To: 5}, rec.streamEvents(StreamGapReplayed)[0])
	assert.Empty(t, rec.streamEvents(StreamGapLost))
}

// panicky panics on its first batch: the stream must go on.
type panicky struct {
	*recorder
	panicked bool
}

func (p *panicky) HandleBatch(src Source, b *Batch) {
	if !p.panicked {
		p.panicked = true
		panic("handler bug")
	}
	p.recorder.HandleBatch(src, b)
}

func TestSubscriberSurvivesAPanickingHandlerAndUnsubscribes(t *testing.T) {
	e := enginetest.StartPublisher(t)
	rec := &panicky{recorder: newRecorder()}
	s := newTestSubscriber(t, rec)
	sub := openEngine(t, e, "e", 0, nil)
	subscribeReady(t, s, e, "e", sub)
	e.Send("e", batchOf(storedEv([]uint64{1}, nil, 0)))
	e.Send("e", batchOf(storedEv([]uint64{2}, nil, 0)))
	rec.waitFor(t, "seq 1", func() bool { return len(rec.batches) == 1 })
	assert.Equal(t, []uint64{1}, rec.seqs())
	assert.Equal(t, uint64(1), s.Stats().HandlerPanics.Load())

	assert.Equal(t, 1, s.Unsubscribe("m", 1))
	assert.Empty(t, s.Sources())
	assert.Equal(t, 0, s.Unsubscribe("m", 1))
	_, err := s.Subscribe(sub) // and again
	require.NoError(t, err)
	_, err = s.Subscribe(sub)
	require.Error(t, err, "already subscribed")
}

func TestSubscriberWaitsForAnEngineThatIsNotUpYet(t *testing.T) {
	e := enginetest.StartPublisher(t)
	rec := newRecorder()
	s := newTestSubscriber(t, rec)
	port := enginetest.FreePorts(t, 1)
	_, err := s.Subscribe(Subscription{Model: "m", WorkerID: 1, Endpoint: enginetest.TCP(port), Topic: "kv"})
	require.NoError(t, err)
	time.Sleep(300 * time.Millisecond) // several failed dials
	assert.Zero(t, s.Stats().Connects.Load())

	e.Do(map[string]any{"op": "open", "name": "e", "endpoint": enginetest.TCP(port), "topic": "kv"})
	e.Do(map[string]any{"op": "wait_sub", "name": "e"})
	e.Send("e", batchOf(storedEv([]uint64{1}, nil, 0)))
	rec.waitFor(t, "the first batch", func() bool { return len(rec.batches) == 1 })
	assert.Equal(t, uint64(1), s.Stats().Connects.Load())

	// It goes away: reported, and the subscriber keeps trying.
	e.Do(map[string]any{"op": "close", "name": "e"})
	rec.waitFor(t, "disconnected", func() bool { return rec.countLocked(StreamDisconnected) == 1 })
	ss := s.Stats().Source(Source{Model: "m", WorkerID: 1})
	require.NotNil(t, ss)
	assert.False(t, ss.Connected.Load())
	assert.True(t, ss.HaveSeq.Load())
	assert.Equal(t, uint64(0), ss.LastSeq.Load())
}

// slow takes its time over each batch.
type slow struct{ *recorder }

func (s slow) HandleBatch(src Source, b *Batch) {
	time.Sleep(2 * time.Millisecond)
	s.recorder.HandleBatch(src, b)
}

// A slow handler makes the receiver wait once the queue is full, by
// count (QueueLen) or by bytes (QueueBytes: here a byte, so each message
// waits for the one before to be handled), and nothing is lost.
func TestSubscriberSlowHandlerLosesNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"messages", Options{QueueLen: 2}},
		{"bytes", Options{QueueBytes: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) { testSlowHandlerLosesNothing(t, tc.opts) })
	}
}

func testSlowHandlerLosesNothing(t *testing.T, opts Options) {
	e := enginetest.StartPublisher(t)
	rec := slow{newRecorder()}
	opts.Handler, opts.ReconnectMin = rec, 20*time.Millisecond
	s, err := New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	sub := openEngine(t, e, "e", 0, nil)
	subscribeReady(t, s, e, "e", sub)
	const n = 150
	for i := range n {
		e.Send("e", batchOf(storedEv([]uint64{uint64(i + 1)}, nil, 0)))
	}
	rec.waitFor(t, "every batch", func() bool { return len(rec.batches) == n })
	seqs := rec.seqs()
	for i, seq := range seqs {
		require.Equal(t, uint64(i), seq)
	}
	assert.Positive(t, s.Stats().QueueWaits.Load(), "the receiver waited instead of dropping")
	assert.Zero(t, s.Stats().Gaps.Load())
}

// overlapCounter records how many HandleBatch calls run at once.
type overlapCounter struct {
	*recorder
	running, most atomic.Int32
}

func (o *overlapCounter) HandleBatch(src Source, b *Batch) {
	n := o.running.Add(1)
	for {
		m := o.most.Load()
		if n <= m || o.most.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(2 * time.Millisecond) // long enough for the other sources' calls to pile up
	o.running.Add(-1)
	o.recorder.HandleBatch(src, b)
}

// Options.Workers bounds how many sources' batches are handled at once
// (the rest wait, counted), and every source still gets all its batches
// in order.
func TestSubscriberWorkersBoundConcurrentHandlerCalls(t *testing.T) {
	for _, workers := range []int{1, 2} {
		t.Run(strconv.Itoa(workers), func(t *testing.T) {
			e := enginetest.StartPublisher(t)
			rec := &overlapCounter{recorder: newRecorder()}
			s, err := New(Options{Handler: rec, Workers: workers, ReconnectMin: 20 * time.Millisecond})
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			const engines, n = 4, 20
			dialEngines(t, e, s, engines)
			sendInTurn(e, engines, n)
			requireEveryBatchInOrder(t, rec.recorder, engines, n)
			assert.LessOrEqual(t, rec.most.Load(), int32(workers))
			assert.Positive(t, s.Stats().WorkerWaits.Load(), "sources waited for a worker")
		})
	}
}

// dialEngines opens engines e0.. on e's publisher, each subscribed by s
// as worker i+1.
func dialEngines(t *testing.T, e *enginetest.Publisher, s *Subscriber, engines int) {
	t.Helper()
	for i := range engines {
		name := "e" + strconv.Itoa(i)
		sub := openEngine(t, e, name, 0, nil)
		sub.WorkerID = uint64(i + 1)
		subscribeReady(t, s, e, name, sub)
	}
}

// sendInTurn sends n one-block batches from each engine e0.., in turn.
func sendInTurn(e *enginetest.Publisher, engines, n int) {
	for j := range n {
		for i := range engines {
			e.Send("e"+strconv.Itoa(i), batchOf(storedEv([]uint64{uint64(j + 1)}, nil, 0)))
		}
	}
}

// requireEveryBatchInOrder waits for n batches from each of the engines
// and checks each engine's came in seq order.
func requireEveryBatchInOrder(t *testing.T, rec *recorder, engines, n int) {
	t.Helper()
	rec.waitFor(t, "every batch", func() bool { return len(rec.batches) == engines*n })
	perSource := map[uint64]int{}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, b := range rec.batches {
		require.Equal(t, uint64(perSource[b.src.WorkerID]), b.b.Seq, "worker %d", b.src.WorkerID)
		perSource[b.src.WorkerID]++
	}
	assert.Len(t, perSource, engines)
}

// slowHandler takes a while over each batch, so that the engines'
// messages fill every queue behind it.
type slowHandler struct{ *recorder }

func (h slowHandler) HandleBatch(src Source, b *Batch) {
	time.Sleep(200 * time.Microsecond)
	h.recorder.HandleBatch(src, b)
}

// With Workers, the engine connections' readers take the same tokens as
// the decoders (router/internal/cpugate). A reader that holds one while
// it waits for its full queue, behind a decoder waiting for a token,
// would stop the ingest for good; each receiver's Link makes its readers
// give their tokens back while it waits. One token, one-message queues
// and four engines sending at once, on dialed sockets and on the bound
// one: every batch still arrives, in order.
func TestGatedReadersGiveBackTheirTokensWhileTheirQueueIsFull(t *testing.T) {
	const engines, n = 4, 300
	for _, bound := range []bool{false, true} {
		t.Run(map[bool]string{false: "dialed", true: "bound"}[bound], func(t *testing.T) {
			e := enginetest.StartPublisher(t)
			rec := slowHandler{newRecorder()}
			s, err := New(Options{Handler: rec, Workers: 1, QueueLen: 1, QueueBytes: 1,
				ReconnectMin: 20 * time.Millisecond})
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			if bound {
				addr, err := s.Bind(Binding{Endpoint: "tcp://127.0.0.1:0", Topic: "kv@",
					Resolve: func(topic string) (Source, bool) {
						pod, model, ok := ParseLLMDTopic(topic)
						id, err := strconv.Atoi(strings.TrimSuffix(pod, ":8000"))
						return Source{Model: model, WorkerID: uint64(id)}, ok && err == nil
					}})
				require.NoError(t, err)
				for i := range engines {
					name := "e" + strconv.Itoa(i)
					e.Do(map[string]any{"op": "open", "name": name, "endpoint": "tcp://" + addr.String(),
						"bind": false, "topic": "kv@" + strconv.Itoa(i+1) + ":8000@m"})
					e.Do(map[string]any{"op": "wait_sub", "name": name})
				}
			} else {
				dialEngines(t, e, s, engines)
			}
			sendInTurn(e, engines, n)
			requireEveryBatchInOrder(t, rec.recorder, engines, n)
			assert.Positive(t, s.Stats().QueueWaits.Load(), "the queues filled")
			if !bound {
				// Four readers and a decoder for one token: some wait
				// (counted). The bound socket's one receiver waits so often
				// that its readers mostly read without a token.
				assert.Positive(t, s.Stats().ReaderWaits.Load(), "readers waited for the token")
			}
		})
	}
}

// Each source's queue bound is the budget shared among the sources,
// between 256 KiB and QueueBytes, following the sources as they come and
// go.
func TestQueueBudgetIsSharedAmongSources(t *testing.T) {
	s, err := New(Options{Handler: newRecorder(), QueueBudget: 2 << 20, ReconnectMin: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	port := enginetest.FreePorts(t, 1) // nothing listens: the sources keep dialling
	for _, tc := range []struct{ sources, share int }{
		{1, 2 << 20}, {2, 1 << 20}, {4, 512 << 10}, {8, 256 << 10}, {16, 256 << 10},
	} {
		for id := len(s.Sources()); id < tc.sources; id++ {
			_, err := s.Subscribe(Subscription{Model: "m", WorkerID: uint64(id), Endpoint: enginetest.TCP(port)})
			require.NoError(t, err)
		}
		assert.Equal(t, int64(tc.share), s.queueShare.Load(), "%d sources", tc.sources)
	}
	for id := 15; id >= 2; id-- {
		require.Equal(t, 1, s.Unsubscribe("m", uint64(id)))
	}
	assert.Equal(t, int64(1<<20), s.queueShare.Load(), "back to 2 sources")

	small, err := New(Options{Handler: newRecorder(), QueueBytes: 1, ReconnectMin: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { _ = small.Close() })
	_, err = small.Subscribe(Subscription{Model: "m", WorkerID: 1, Endpoint: enginetest.TCP(port)})
	require.NoError(t, err)
	assert.Equal(t, int64(1), small.queueShare.Load(), "QueueBytes below the floor still bounds")
}
