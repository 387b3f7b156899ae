package ingest

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/kvmock"
)

// A PUB socket drops what it publishes before a subscription reaches it:
// once connected, a fresh stream asks the replay endpoint for what the
// engine published from seq 0, without waiting for a later live message
// to show the gap (an engine gone idle sends none).
func TestFreshStreamCatchesUpFromSeqZero(t *testing.T) {
	cfg := kvmock.DefaultConfig()
	cfg.EventsEndpoint = "tcp://[::ffff:127.0.0.1]:0"
	cfg.ReplayEndpoint = "tcp://[::ffff:127.0.0.1]:0"
	cfg.StepInterval = time.Millisecond
	pub, err := kvmock.NewPublisher(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { _ = pub.Close() })
	for k := range 3 {
		pub.Emit(kvmock.Event{Kind: kvmock.EventAllBlocksCleared})
		require.Eventually(t, func() bool { return pub.NextSeq() == uint64(k+1) }, 10*time.Second, time.Millisecond)
	}

	rec := newRecorder()
	s := newTestSubscriber(t, rec)
	_, err = s.Subscribe(Subscription{Model: "m", WorkerID: 1, Endpoint: "tcp://" + pub.EventsAddr().String(),
		ReplayEndpoint: "tcp://" + pub.ReplayAddr().String(), Topic: cfg.Topic})
	require.NoError(t, err)
	rec.waitFor(t, "seqs 0..2 from the replay endpoint", func() bool { return len(rec.batches) == 3 })
	assert.Equal(t, []uint64{0, 1, 2}, rec.seqs())
	assert.Empty(t, rec.streamEvents(StreamGapLost))

	// And the live stream goes on from there.
	require.Eventually(t, pub.Subscribed, 10*time.Second, time.Millisecond)
	pub.Emit(kvmock.Event{Kind: kvmock.EventAllBlocksCleared})
	rec.waitFor(t, "seq 3 live", func() bool { return len(rec.batches) == 4 })
	assert.Equal(t, []uint64{0, 1, 2, 3}, rec.seqs())
}
