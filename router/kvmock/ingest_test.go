package kvmock

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/ingest"
)

// recordingHandler is an ingest.Handler that keeps what it is given.
type recordingHandler struct {
	mu      sync.Mutex
	batches []*ingest.Batch
	stream  []ingest.StreamEvent
}

func (h *recordingHandler) HandleBatch(_ ingest.Source, b *ingest.Batch) {
	h.mu.Lock()
	h.batches = append(h.batches, b)
	h.mu.Unlock()
}

func (h *recordingHandler) HandleStream(_ ingest.Source, ev ingest.StreamEvent) {
	h.mu.Lock()
	h.stream = append(h.stream, ev)
	h.mu.Unlock()
}

func (h *recordingHandler) seqs() []uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]uint64, len(h.batches))
	for i, b := range h.batches {
		out[i] = b.Seq
	}
	return out
}

func (h *recordingHandler) streamKinds() []ingest.StreamEventKind {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]ingest.StreamEventKind, len(h.stream))
	for i, ev := range h.stream {
		out[i] = ev.Kind
	}
	return out
}

// TestRoutersSubscriberRecoversMissedBatchesByReplay puts kvrouter's own
// subscriber (router/ingest) in front of a kvmock that published before
// the router arrived. The router joins mid-stream (its first live batch is
// seq 1) and asks the replay endpoint for everything from seq 0, as its
// indexer does to rebuild a worker: in either reply shape it gets the
// missed batch and the live one again, in order, with their topic.
func TestRoutersSubscriberRecoversMissedBatchesByReplay(t *testing.T) {
	for _, shape := range []ReplayShape{ReplayShape4, ReplayShape3} {
		t.Run(string(shape), func(t *testing.T) {
			cfg := testConfig()
			cfg.EventsEndpoint, cfg.ReplayEndpoint = loopbackAny, loopbackAny
			cfg.ReplayShape, cfg.Topic = shape, "kv@mock"
			cfg.StepInterval = time.Millisecond
			s, err := NewServer(cfg, nil)
			require.NoError(t, err)
			defer func() { assert.NoError(t, s.Close()) }()
			run(t, s.Engine, seqTokens(1, 9), 1) // seq 0: nobody listens yet
			require.Eventually(t, func() bool { return s.Publisher.NextSeq() == 1 }, 5*time.Second, time.Millisecond)

			h := &recordingHandler{}
			sub, err := ingest.New(ingest.Options{Handler: h})
			require.NoError(t, err)
			defer sub.Close()
			srcs, err := sub.Subscribe(ingest.Subscription{
				Model: "kvmock", WorkerID: 7, Topic: "kv@",
				Endpoint:       "tcp://" + s.Publisher.EventsAddr().String(),
				ReplayEndpoint: "tcp://" + s.Publisher.ReplayAddr().String(),
			})
			require.NoError(t, err)
			require.Len(t, srcs, 1)
			require.Eventually(t, s.Publisher.Subscribed, 5*time.Second, time.Millisecond)

			run(t, s.Engine, seqTokens(100, 9), 1) // seq 1, live
			require.Eventually(t, func() bool { return len(h.seqs()) == 1 }, 5*time.Second, time.Millisecond)
			require.NoError(t, sub.RequestReplay(srcs[0], 0))
			require.Eventually(t, func() bool { return len(h.seqs()) == 3 }, 5*time.Second, time.Millisecond)

			assert.Equal(t, []uint64{1, 0, 1}, h.seqs(), "live seq 1, then the replay from seq 0")
			kinds := h.streamKinds()
			assert.Contains(t, kinds, ingest.StreamGapReplayed)
			assert.NotContains(t, kinds, ingest.StreamGapLost)
			assert.NotContains(t, kinds, ingest.StreamMalformed)
			h.mu.Lock()
			defer h.mu.Unlock()
			for _, b := range h.batches {
				assert.Equal(t, "kv@mock", b.Topic)
				require.NotEmpty(t, b.Events)
				assert.Equal(t, ingest.BlockStored, b.Events[0].Kind)
			}
			assert.Equal(t, h.batches[0].Events, h.batches[2].Events, "the replayed batch is the live one")
		})
	}
}
