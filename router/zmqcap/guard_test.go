package zmqcap

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/zmqcap/zmqcaptest"
)

const testMax = 4096

// scanAll feeds stream to a fresh guard in chunks of chunk bytes (all at
// once when chunk is 0) and returns its verdict and how many handshakes
// it saw.
func scanAll(max int64, stream []byte, chunk int) (*TooLargeError, int) {
	g := newGuard(max)
	handshakes := 0
	g.handshake = func() { handshakes++ }
	if chunk <= 0 {
		chunk = len(stream) + 1
	}
	for len(stream) > 0 {
		n := min(chunk, len(stream))
		if err := g.scan(stream[:n]); err != nil {
			return err, handshakes
		}
		stream = stream[n:]
	}
	return nil, handshakes
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestGuardAdmitsWhatFitsAndRejectsWhatDoesNot(t *testing.T) {
	handshake := append(zmqcaptest.Greeting(), zmqcaptest.Ready("PUB")...)
	fits := testMax - FrameOverhead
	cases := []struct {
		name    string
		after   []byte // after the greeting and READY
		wantErr *TooLargeError
	}{
		{name: "the issue's header: long, final, 2^40 bytes",
			after:   zmqcaptest.LongHeader(1<<40, false),
			wantErr: &TooLargeError{Frame: 1 << 40, Message: 1 << 40, Max: testMax}},
		{name: "a header declaring 2^64-1 bytes",
			after:   zmqcaptest.LongHeader(^uint64(0), true),
			wantErr: &TooLargeError{Frame: ^uint64(0), Message: ^uint64(0), Max: testMax}},
		{name: "one long frame exactly at the cap", after: zmqcaptest.Message(make([]byte, fits))},
		{name: "one long frame a byte over the cap",
			after:   zmqcaptest.LongHeader(uint64(fits+1), false),
			wantErr: &TooLargeError{Frame: uint64(fits + 1), Message: testMax + 1, Max: testMax}},
		{name: "three frames exactly at the cap",
			after: zmqcaptest.Message([]byte("kv"), make([]byte, 8), make([]byte, testMax-3*FrameOverhead-10))},
		{name: "three frames a byte over the cap",
			after: cat(zmqcaptest.Frame([]byte("kv"), true), zmqcaptest.Frame(make([]byte, 8), true),
				zmqcaptest.LongHeader(uint64(testMax-3*FrameOverhead-9), false)),
			wantErr: &TooLargeError{Frame: uint64(testMax - 3*FrameOverhead - 9), Message: testMax + 1, Max: testMax}},
		{name: "empty frames count their overhead",
			after:   bytes.Repeat([]byte{0x01, 0x00}, testMax/FrameOverhead+1),
			wantErr: &TooLargeError{Frame: 0, Message: testMax + FrameOverhead, Max: testMax}},
		{name: "each message starts from zero",
			after: bytes.Repeat(zmqcaptest.Message(make([]byte, fits)), 5)},
		{name: "a short frame over a small budget left",
			after: cat(zmqcaptest.Frame(make([]byte, fits-FrameOverhead-10), true),
				zmqcaptest.Frame(make([]byte, 11), false)),
			wantErr: &TooLargeError{Frame: 11, Message: testMax + 1, Max: testMax}},
		{name: "a command over the cap",
			after:   cat([]byte{0x06}, zmqcaptest.LongHeader(1<<20, false)[1:]),
			wantErr: &TooLargeError{Frame: 1 << 20, Message: 1 << 20, Max: testMax, Command: true}},
	}
	for _, tc := range cases {
		for _, chunk := range []int{0, 1, 2, 7, 64} {
			got, handshakes := scanAll(testMax, cat(handshake, tc.after), chunk)
			assert.Equal(t, tc.wantErr, got, "%s, chunks of %d", tc.name, chunk)
			assert.Equal(t, 1, handshakes, "%s, chunks of %d: the handshake ends at READY", tc.name, chunk)
		}
	}
}

func TestGuardSkipsTheGreeting(t *testing.T) {
	// Greeting bytes that would be a huge long header if they were framed.
	greeting := bytes.Repeat([]byte{0x02, 0xFF}, 32)
	got, handshakes := scanAll(testMax, greeting, 3)
	assert.Nil(t, got)
	assert.Zero(t, handshakes)
}

func TestTooLargeErrorIsAClosingNetError(t *testing.T) {
	err := &TooLargeError{Peer: "10.0.0.9:4000", Local: "10.0.0.1:5557", Frame: 1 << 40, Message: 1 << 40, Max: 64 << 20}
	assert.False(t, err.Timeout())
	assert.False(t, err.Temporary())
	assert.Contains(t, err.Error(), "10.0.0.9:4000")
	assert.Contains(t, err.Error(), "10.0.0.1:5557")
	assert.Contains(t, err.Error(), "1099511627776")
	assert.Contains(t, err.Error(), "67108864")
}

func TestNewRejectsCapsOutOfRange(t *testing.T) {
	for _, max := range []int64{0, MinLimit - 1, MaxLimit + 1, -1} {
		_, err := New(max, nil)
		assert.Error(t, err, "cap %d", max)
	}
}

func TestEndpointRenamesTheSchemeOfNetworkTransportsOnly(t *testing.T) {
	c, err := New(MinLimit, nil)
	require.NoError(t, err)
	ep, err := c.Endpoint("inproc://x")
	require.NoError(t, err)
	assert.Equal(t, "inproc://x", ep, "inproc stays in the process: not capped")
	tcp, err := c.Endpoint("tcp://127.0.0.1:5557")
	require.NoError(t, err)
	assert.Regexp(t, `^tcp-zmqcap\d+://127\.0\.0\.1:5557$`, tcp)
	again, err := c.Endpoint("tcp://10.0.0.1:1")
	require.NoError(t, err)
	assert.Equal(t, strings.Split(tcp, "://")[0], strings.Split(again, "://")[0], "one transport per scheme and Cap")
	ipc, err := c.Endpoint("ipc:///tmp/x.sock")
	require.NoError(t, err)
	assert.Regexp(t, `^ipc-zmqcap\d+:///tmp/x\.sock$`, ipc)
	other, err := New(MinLimit, nil)
	require.NoError(t, err)
	tcp2, err := other.Endpoint("tcp://127.0.0.1:5557")
	require.NoError(t, err)
	assert.NotEqual(t, tcp, tcp2, "each Cap its own transport")
}
