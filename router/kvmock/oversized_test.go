package kvmock

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/zmqcap/zmqcaptest"
)

// TestSocketsDropAPeerClaimingAHugeFrame: a peer that completes the
// handshake and then sends a frame header declaring 2^40 bytes is
// disconnected by the events PUB and the replay ROUTER alike, and both go
// on serving (unguarded, zmq4 would allocate the 2^40 bytes and the
// process die of it).
func TestSocketsDropAPeerClaimingAHugeFrame(t *testing.T) {
	p := startPublisher(t, publisherConfig(EventFormatMap, HashFormatInt, ReplayShape4))
	for _, target := range []struct {
		name, addr, peerType string
	}{
		{"events PUB", p.EventsAddr().String(), "SUB"},
		{"replay ROUTER", p.ReplayAddr().String(), "DEALER"},
	} {
		c, err := net.DialTimeout("tcp", target.addr, 5*time.Second)
		require.NoError(t, err, target.name)
		require.NoError(t, zmqcaptest.Handshake(c, target.peerType), target.name)
		_, err = c.Write(zmqcaptest.LongHeader(1<<40, false))
		require.NoError(t, err, target.name)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = io.Copy(io.Discard, c)
		var ne net.Error
		assert.False(t, errors.As(err, &ne) && ne.Timeout(), "%s drops the peer", target.name)
		_ = c.Close()
	}

	sub := subscribe(t, p, "")
	p.Emit(Event{Kind: EventAllBlocksCleared})
	m := recvWithin(t, sub, 5*time.Second)
	tag, _ := eventFields(t, decodeBatch(t, m.Frames[2]).events[0])
	assert.Equal(t, "AllBlocksCleared", tag)
	assert.NotEmpty(t, replayAll(t, p, 0), "the replay endpoint still answers")
}
