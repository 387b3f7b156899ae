package ingesttest_test

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/ingest/ingesttest"
)

// A subscriber receives the batches as engines frame them: topic, seq
// (8 bytes, big endian), payload.
func TestPublisherFramesBatchesAsEnginesDo(t *testing.T) {
	pub := ingesttest.NewPublisher(t)
	ep := pub.Listen("tcp://127.0.0.1:0")
	assert.False(t, pub.Subscribed())
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	sub := zmq4.NewSub(ctx)
	defer sub.Close()
	require.NoError(t, sub.Dial(ep))
	require.NoError(t, sub.SetOption(zmq4.OptionSubscribe, "kv"))
	pub.WaitSubscribed()
	pub.Send("kv", 7, []byte("payload"))
	msg, err := sub.Recv()
	require.NoError(t, err)
	require.Len(t, msg.Frames, 3)
	assert.Equal(t, "kv", string(msg.Frames[0]))
	assert.Equal(t, uint64(7), binary.BigEndian.Uint64(msg.Frames[1]))
	assert.Equal(t, ingesttest.SeqFrame(7), msg.Frames[1])
	assert.Equal(t, "payload", string(msg.Frames[2]))
	pub.Close()
	pub.Close() // twice: the test's end closes it again
}
