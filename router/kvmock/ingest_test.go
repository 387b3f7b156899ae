package kvmock

import (
	"slices"
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

			// Live batches until one arrives (a PUB drops what it sends
			// while a subscription is still on its way).
			for i := 0; len(h.seqs()) == 0; i++ {
				require.Less(t, i, 100, "no live batch reached the router")
				run(t, s.Engine, seqTokens(100+10*i, 9), 1)
				time.Sleep(20 * time.Millisecond)
			}
			last := s.Publisher.NextSeq() - 1
			require.NoError(t, sub.RequestReplay(srcs[0], 0))
			require.Eventually(t, func() bool { return slices.Contains(h.streamKinds(), ingest.StreamGapReplayed) },
				5*time.Second, time.Millisecond)

			seqs := h.seqs()
			want := make([]uint64, last+1)
			for i := range want {
				want[i] = uint64(i)
			}
			require.GreaterOrEqual(t, len(seqs), len(want))
			assert.Equal(t, want, seqs[len(seqs)-len(want):], "the replay from seq 0, after the live batches")
			kinds := h.streamKinds()
			assert.NotContains(t, kinds, ingest.StreamGapLost)
			assert.NotContains(t, kinds, ingest.StreamMalformed)
			h.mu.Lock()
			defer h.mu.Unlock()
			for _, b := range h.batches {
				if shape == ReplayShape3 && b.Topic == "kv@" {
					// The stream's catch-up at connect, before any live
					// message named the topic: 3-frame replies carry none,
					// the subscription's stands in.
					continue
				}
				assert.Equal(t, "kv@mock", b.Topic)
				require.NotEmpty(t, b.Events)
				assert.Equal(t, ingest.BlockStored, b.Events[0].Kind)
			}
			first := h.batches[0] // live, replayed again at the end
			assert.Equal(t, first.Events, h.batches[len(h.batches)-int(last)-1+int(first.Seq)].Events, "a replayed batch is the live one")
		})
	}
}
