package main

import (
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/config"
	"github.com/kvhash/kvhash/router/ingest"
	"github.com/kvhash/kvhash/router/zmqcap"
	"github.com/kvhash/kvhash/router/zmqcap/zmqcaptest"
)

func TestZMQCapDefaultsAgree(t *testing.T) {
	assert.Equal(t, int64(ingest.DefaultMaxMessageBytes), config.Default().ZMQMaxMessageBytes)
	assert.Equal(t, int64(zmqcap.MinLimit), int64(config.MinZMQMaxMessageBytes))
}

type nopHandler struct{}

func (nopHandler) HandleBatch(ingest.Source, *ingest.Batch)       {}
func (nopHandler) HandleStream(ingest.Source, ingest.StreamEvent) {}

// TestZMQMaxMessageBytesReachesTheSockets: a message a byte over the
// configured cap (and far under the default) drops its peer.
func TestZMQMaxMessageBytesReachesTheSockets(t *testing.T) {
	cfg := config.Default()
	cfg.ZMQMaxMessageBytes = 8192
	ing, err := newIngest(cfg)(nopHandler{}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer ing.Close()
	sub := ing.(*ingest.Subscriber)
	addr, err := sub.Bind(ingest.Binding{Endpoint: "tcp://127.0.0.1:0",
		Resolve: func(string) (ingest.Source, bool) { return ingest.Source{Model: "m"}, true }})
	require.NoError(t, err)

	c, err := net.DialTimeout("tcp", addr.String(), 5*time.Second)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, zmqcaptest.Handshake(c, "PUB"))
	_, err = c.Write(zmqcaptest.LongHeader(8192-zmqcap.FrameOverhead+1, false))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return sub.Stats().Oversized.Load() == 1 }, 10*time.Second, 10*time.Millisecond)
}
