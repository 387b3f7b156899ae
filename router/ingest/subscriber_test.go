package ingest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/internal/enginetest"
)

// These tests run the subscriber against testdata/publisher.py: a Python
// engine that encodes with msgspec and publishes with pyzmq on loopback,
// as vLLM and SGLang do.

func newTestSubscriber(t *testing.T, h Handler) *Subscriber {
	t.Helper()
	s, err := New(Options{
		Handler:       h,
		ReplayTimeout: 2 * time.Second,
		ReconnectMin:  20 * time.Millisecond,
		ReconnectMax:  200 * time.Millisecond,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func storedEv(hashes []uint64, parent *uint64, firstToken int) map[string]any {
	toks := make([]int, 16*len(hashes))
	for i := range toks {
		toks[i] = firstToken + i
	}
	ev := map[string]any{"type": "BlockStored", "block_hashes": hashes, "token_ids": toks, "block_size": 16}
	if parent != nil {
		ev["parent_block_hash"] = *parent
	}
	return ev
}

func batchOf(events ...map[string]any) map[string]any {
	return map[string]any{"events": events}
}

// openEngine opens publisher name on a fresh port (and a replay endpoint
// when shape > 0) and returns the subscription for it.
func openEngine(t *testing.T, e *enginetest.Publisher, name string, shape int, extra map[string]any) Subscription {
	t.Helper()
	port := enginetest.FreePorts(t, 1)
	cmd := map[string]any{"op": "open", "name": name, "endpoint": enginetest.TCP(port), "topic": "kv"}
	sub := Subscription{Model: "m", WorkerID: 1, Endpoint: enginetest.TCP(port), Topic: "kv"}
	if shape > 0 {
		rport := enginetest.FreePorts(t, 1)
		cmd["replay"], cmd["replay_shape"] = enginetest.TCP(rport), shape
		sub.ReplayEndpoint = enginetest.TCP(rport)
	}
	for k, v := range extra {
		cmd[k] = v
	}
	e.Do(cmd)
	return sub
}

func subscribeReady(t *testing.T, s *Subscriber, e *enginetest.Publisher, name string, sub Subscription) {
	t.Helper()
	_, err := s.Subscribe(sub)
	require.NoError(t, err)
	e.Do(map[string]any{"op": "wait_sub", "name": name})
}

func TestSubscriberDeliversEveryWireLayout(t *testing.T) {
	e := enginetest.StartPublisher(t)
	rec := newRecorder()
	s := newTestSubscriber(t, rec)
	sub := openEngine(t, e, "e", 0, nil)
	subscribeReady(t, s, e, "e", sub)

	p := uint64(1)
	neg := uint64(1<<64 - 2) // SGLang's -2 as u64
	e.Send("e", map[string]any{"layout": "map", "batch_form": "array3", "dp_rank": 0,
		"events": []map[string]any{storedEv([]uint64{1}, nil, 0)}})
	e.Send("e", map[string]any{"layout": "array", "batch_form": "array2",
		"events": []map[string]any{storedEv([]uint64{2, 1<<64 - 1}, &p, 16)}})
	e.Send("e", map[string]any{"layout": "map", "batch_form": "map", "bytes_hashes": true, "dp_rank": 0,
		"events": []map[string]any{{"type": "BlockRemoved", "block_hashes": []uint64{2}}}})
	e.Send("e", map[string]any{"layout": "array", "bytes_hashes": true,
		"events": []map[string]any{storedEv([]uint64{3}, &p, 48), {"type": "AllBlocksCleared"}}})
	e.Send("e", map[string]any{"layout": "sglang", "batch_form": "array2",
		"events": []map[string]any{{"type": "BlockStored", "block_hashes": []any{-2}, "token_ids": []int{1, 2},
			"block_size": 16, "cache_salt": "tenant-7"}}})

	rec.waitFor(t, "5 batches", func() bool { return len(rec.batches) == 5 })
	require.Equal(t, []uint64{0, 1, 2, 3, 4}, rec.seqs())
	rec.mu.Lock()
	defer rec.mu.Unlock()
	b := rec.batches
	assert.Equal(t, "kv", b[0].b.Topic)
	assert.Equal(t, sub.Endpoint, b[0].src.Endpoint)
	require.NotNil(t, b[0].b.DPRank)
	assert.Nil(t, b[1].b.DPRank, "a 2-element batch has no rank")
	assert.Equal(t, []uint64{1}, b[0].b.Events[0].BlockHashes)
	assert.Equal(t, []uint64{2, 1<<64 - 1}, b[1].b.Events[0].BlockHashes)
	assert.Equal(t, uint64(1), *b[1].b.Events[0].ParentHash)
	assert.Len(t, b[1].b.Events[0].TokenIDs, 32)
	assert.Equal(t, uint32(16), b[1].b.Events[0].TokenIDs[0])
	assert.Equal(t, BlockRemoved, b[2].b.Events[0].Kind)
	assert.Equal(t, []uint64{2}, b[2].b.Events[0].BlockHashes, "bytes hash: last 8 bytes")
	assert.Equal(t, []Kind{BlockStored, AllBlocksCleared}, []Kind{b[3].b.Events[0].Kind, b[3].b.Events[1].Kind})
	assert.Equal(t, uint64(1), *b[3].b.Events[0].ParentHash)
	assert.Equal(t, []uint64{neg}, b[4].b.Events[0].BlockHashes)
	assert.Equal(t, "tenant-7", b[4].b.Events[0].CacheSalt)
	assert.Equal(t, 1, rec.countLocked(StreamConnected))
	assert.Equal(t, uint64(5), s.Stats().Batches.Load())
	assert.Equal(t, uint64(4), s.Stats().Events(BlockStored))
}

func TestSubscriberGapIsReplayedInBothReplyShapes(t *testing.T) {
	for _, shape := range []int{4, 3} {
		t.Run(fmt.Sprintf("%d-frame replies", shape), func(t *testing.T) {
			e := enginetest.StartPublisher(t)
			rec := newRecorder()
			s := newTestSubscriber(t, rec)
			sub := openEngine(t, e, "e", shape, nil)
			subscribeReady(t, s, e, "e", sub)

			e.Send("e", batchOf(storedEv([]uint64{1}, nil, 0)))
			rec.waitFor(t, "seq 0", func() bool { return len(rec.batches) == 1 })
			// Seqs 1 and 2 are published while this subscriber misses them.
			e.Send("e", map[string]any{"skip": true, "events": []map[string]any{storedEv([]uint64{2}, nil, 0)}})
			e.Send("e", map[string]any{"skip": true, "layout": "array", "events": []map[string]any{storedEv([]uint64{3}, nil, 0)}})
			e.Send("e", batchOf(storedEv([]uint64{4}, nil, 0)))
			e.Send("e", batchOf(storedEv([]uint64{5}, nil, 0)))

			rec.waitFor(t, "seqs 0..4 and the replay's report", func() bool {
				return len(rec.batches) == 5 && rec.countLocked(StreamGapReplayed) == 1
			})
			assert.Equal(t, []uint64{0, 1, 2, 3, 4}, rec.seqs())
			replayed := rec.streamEvents(StreamGapReplayed)
			require.Len(t, replayed, 1)
			assert.Equal(t, StreamEvent{Kind: StreamGapReplayed, From: 1, To: 3}, replayed[0])
			assert.Empty(t, rec.streamEvents(StreamGapLost))
			rec.mu.Lock()
			assert.Equal(t, "kv", rec.batches[1].b.Topic, "a replayed batch keeps the stream's topic")
			assert.Equal(t, []uint64{3}, rec.batches[2].b.Events[0].BlockHashes)
			rec.mu.Unlock()
			assert.Equal(t, uint64(1), s.Stats().ReplaysOK.Load())
			assert.Equal(t, uint64(1), s.Stats().GapsReplayed.Load())
		})
	}
}

func TestSubscriberGapWithoutReplayIsLost(t *testing.T) {
	cases := []struct {
		name  string
		shape int
		extra map[string]any
	}{
		{"no replay endpoint", 0, nil},
		{"buffer no longer reaches back", 4, map[string]any{"buffer_steps": 1}},
		{"replay endpoint silent", 4, map[string]any{"replay_mode": "silent"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := enginetest.StartPublisher(t)
			rec := newRecorder()
			s, err := New(Options{Handler: rec, ReplayTimeout: 300 * time.Millisecond, ReconnectMin: 20 * time.Millisecond})
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			sub := openEngine(t, e, "e", c.shape, c.extra)
			subscribeReady(t, s, e, "e", sub)

			e.Send("e", batchOf(storedEv([]uint64{1}, nil, 0)))
			rec.waitFor(t, "seq 0", func() bool { return len(rec.batches) == 1 })
			e.Send("e", map[string]any{"skip": true, "events": []map[string]any{storedEv([]uint64{2}, nil, 0)}})
			e.Send("e", map[string]any{"skip": true, "events": []map[string]any{storedEv([]uint64{3}, nil, 0)}})
			e.Send("e", batchOf(storedEv([]uint64{4}, nil, 0)))
			e.Send("e", batchOf(storedEv([]uint64{5}, nil, 0)))

			rec.waitFor(t, "seqs 0, 3, 4", func() bool { return len(rec.batches) == 3 && rec.countLocked(StreamGapLost) == 1 })
			assert.Equal(t, []uint64{0, 3, 4}, rec.seqs())
			lost := rec.streamEvents(StreamGapLost)
			require.Len(t, lost, 1)
			assert.Equal(t, uint64(1), lost[0].From)
			assert.Equal(t, uint64(3), lost[0].To)
			assert.Error(t, lost[0].Err)
			assert.Equal(t, uint64(1), s.Stats().ReplaysFailed.Load())
			assert.Equal(t, uint64(1), s.Stats().GapsLost.Load())
		})
	}
}

func TestSubscriberEngineRestart(t *testing.T) {
	e := enginetest.StartPublisher(t)
	rec := newRecorder()
	s := newTestSubscriber(t, rec)
	sub := openEngine(t, e, "e", 0, nil)
	subscribeReady(t, s, e, "e", sub)
	for i := range 3 {
		e.Send("e", batchOf(storedEv([]uint64{uint64(10 + i)}, nil, 0)))
	}
	rec.waitFor(t, "3 batches", func() bool { return len(rec.batches) == 3 })

	// A new engine process on the same port: its seq starts again at 0.
	e.Do(map[string]any{"op": "open", "name": "e", "endpoint": sub.Endpoint, "topic": "kv"})
	rec.waitFor(t, "reconnected", func() bool { return rec.countLocked(StreamConnected) == 2 })
	e.Do(map[string]any{"op": "wait_sub", "name": "e"})
	e.Send("e", batchOf(storedEv([]uint64{20}, nil, 0)))
	e.Send("e", batchOf(storedEv([]uint64{21}, nil, 0)))

	rec.waitFor(t, "5 batches", func() bool { return len(rec.batches) == 5 })
	assert.Equal(t, []uint64{0, 1, 2, 0, 1}, rec.seqs())
	rec.mu.Lock()
	defer rec.mu.Unlock()
	// Restarted comes after the old stream's last batch, before the new first.
	var order []string
	for _, st := range rec.streams {
		order = append(order, st.ev.Kind.String())
	}
	assert.Equal(t, []string{"connected", "disconnected", "connected", "restarted"}, order)
	assert.Equal(t, 1, rec.countLocked(StreamRestarted))
	assert.Equal(t, uint64(1), s.Stats().Restarts.Load())
	assert.Equal(t, uint64(1), s.Stats().Disconnects.Load())
}
