package zmqcap

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/ingest/ingesttest"
	"github.com/kvhash/kvhash/router/internal/cpugate"
	"github.com/kvhash/kvhash/router/zmqcap/zmqcaptest"
)

// newCap is a Cap of max whose drops arrive on the returned channel.
func newCap(t testing.TB, max int64) (*Cap, <-chan *TooLargeError) {
	t.Helper()
	drops := make(chan *TooLargeError, 16)
	c, err := New(max, func(e *TooLargeError) { drops <- e })
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c, drops
}

// boundSub binds a SUB socket capped at max on a free loopback port and
// returns it with its plain tcp:// address and the Cap's drops.
func boundSub(t testing.TB, max int64) (zmq4.Socket, string, <-chan *TooLargeError) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sub := zmq4.NewSub(ctx)
	t.Cleanup(func() { _ = sub.Close(); cancel() })
	require.NoError(t, sub.SetOption(zmq4.OptionSubscribe, ""))
	c, drops := newCap(t, max)
	ep, err := c.Endpoint("tcp://127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, sub.Listen(ep))
	return sub, "tcp://" + sub.Addr().String(), drops
}

// awaitDrop waits for the Cap's report of a dropped connection.
func awaitDrop(t *testing.T, drops <-chan *TooLargeError) *TooLargeError {
	t.Helper()
	select {
	case e := <-drops:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no drop reported")
		return nil
	}
}

// goodPublisher dials ep with a real PUB and publishes ["kv", "good"]
// every 20 ms until the test ends.
func goodPublisher(t *testing.T, ep string) {
	t.Helper()
	pub := ingesttest.NewPublisher(t)
	pub.Dial(ep)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			_ = pub.Sock.Send(zmq4.NewMsgFrom([]byte("kv"), []byte("good")))
			time.Sleep(20 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { cancel(); <-done }) // before the socket closes
}

// recvResult is one Recv's outcome.
type recvResult struct {
	msg zmq4.Msg
	err error
}

// receiveAll runs Recv in a loop until the socket closes.
func receiveAll(sock zmq4.Socket) <-chan recvResult {
	out := make(chan recvResult, 1024)
	go func() {
		for {
			msg, err := sock.Recv()
			if err != nil && errors.Is(err, context.Canceled) {
				close(out)
				return
			}
			out <- recvResult{msg, err}
		}
	}()
	return out
}

// awaitTooLarge waits for Recv's TooLargeError, skipping messages.
func awaitTooLarge(t *testing.T, results <-chan recvResult) *TooLargeError {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case r := <-results:
			var tl *TooLargeError
			if errors.As(r.err, &tl) {
				return tl
			}
		case <-deadline:
			t.Fatal("no TooLargeError from Recv")
		}
	}
}

// awaitMessage waits for a message whose last frame is body.
func awaitMessage(t *testing.T, results <-chan recvResult, body string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case r := <-results:
			if r.err == nil && len(r.msg.Frames) > 0 && string(r.msg.Frames[len(r.msg.Frames)-1]) == body {
				return
			}
		case <-deadline:
			t.Fatalf("no message %q", body)
		}
	}
}

// attack connects to addr (host:port), completes the handshake as a PUB
// and sends tail.
func attack(t *testing.T, addr string, tail []byte) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, zmqcaptest.Handshake(c, "PUB"))
	_, err = c.Write(tail)
	require.NoError(t, err)
	return c
}

// closedByPeer reports whether the other side closed c (EOF or reset)
// within a few seconds, skipping what it sent first.
func closedByPeer(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return err == nil || !(errors.As(err, &ne) && ne.Timeout())
}

func TestBoundSocketDropsTheOversizedPeerAndServesTheOthers(t *testing.T) {
	sub, ep, drops := boundSub(t, 64<<20)
	results := receiveAll(sub)
	goodPublisher(t, ep)
	awaitMessage(t, results, "good")

	attacker := attack(t, ep[len("tcp://"):], zmqcaptest.LongHeader(1<<40, false))

	tl := awaitTooLarge(t, results)
	assert.Equal(t, attacker.LocalAddr().String(), tl.Peer)
	assert.Equal(t, attacker.RemoteAddr().String(), tl.Local)
	assert.Equal(t, uint64(1<<40), tl.Frame)
	assert.Same(t, tl, awaitDrop(t, drops), "the Cap's owner hears of it")
	assert.True(t, closedByPeer(attacker), "the attacker's connection is closed")
	awaitMessage(t, results, "good")
}

func TestBoundSocketCapBoundary(t *testing.T) {
	sub, ep, _ := boundSub(t, testMax)
	results := receiveAll(sub)
	addr := ep[len("tcp://"):]
	// Two frames: "kv" and a body that brings the message to the cap.
	body := make([]byte, testMax-2*FrameOverhead-2)
	copy(body, "at the cap")
	under := attack(t, addr, zmqcaptest.Message([]byte("kv"), body))
	awaitMessage(t, results, string(body))

	over := attack(t, addr, zmqcaptest.Message([]byte("kv"), append(body, 'x')))
	tl := awaitTooLarge(t, results)
	assert.Equal(t, over.LocalAddr().String(), tl.Peer)
	assert.Equal(t, uint64(testMax+1), tl.Message)
	assert.True(t, closedByPeer(over))

	// The peer under the cap is still connected and heard.
	_, err := under.Write(zmqcaptest.Message([]byte("kv"), []byte("still here")))
	require.NoError(t, err)
	awaitMessage(t, results, "still here")
}

func TestDialedSocketDropsTheOversizedPeer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sub := zmq4.NewSub(ctx)
	defer sub.Close()
	require.NoError(t, sub.SetOption(zmq4.OptionSubscribe, ""))
	cp, drops := newCap(t, 64<<20)
	ep, err := cp.Endpoint("tcp://" + l.Addr().String())
	require.NoError(t, err)

	// The engine's side runs beside Dial, which returns after the handshake.
	accepted := make(chan net.Conn, 1)
	go func() {
		defer close(accepted)
		c, err := l.Accept()
		if err != nil {
			return
		}
		if zmqcaptest.Handshake(c, "PUB") == nil {
			_, _ = c.Write(zmqcaptest.LongHeader(1<<40, false))
		}
		accepted <- c
	}()
	require.NoError(t, sub.Dial(ep))
	c := <-accepted
	require.NotNil(t, c)
	defer c.Close()

	tl := awaitTooLarge(t, receiveAll(sub))
	assert.Equal(t, c.LocalAddr().String(), tl.Peer)
	assert.Same(t, tl, awaitDrop(t, drops))
	assert.True(t, closedByPeer(c))
}

func TestASilentPeerDoesNotHoldTheBoundSocket(t *testing.T) {
	defer func(d time.Duration) { handshakeTimeout = d }(handshakeTimeout)
	handshakeTimeout = 300 * time.Millisecond
	sub, ep, _ := boundSub(t, testMax)
	results := receiveAll(sub)

	silent, err := net.DialTimeout("tcp", ep[len("tcp://"):], 5*time.Second)
	require.NoError(t, err)
	defer silent.Close()
	goodPublisher(t, ep) // accepted once the silent peer is let go

	awaitMessage(t, results, "good")
	assert.True(t, closedByPeer(silent), "the silent peer's connection is closed")
}

func TestARejectedHandshakeIsClosed(t *testing.T) {
	defer func(d time.Duration) { handshakeTimeout = d }(handshakeTimeout)
	handshakeTimeout = 300 * time.Millisecond
	_, ep, _ := boundSub(t, testMax)
	// A REQ is no peer of a SUB: zmq4 rejects the handshake and leaves
	// the connection open; the watchdog closes it.
	c, err := net.DialTimeout("tcp", ep[len("tcp://"):], 5*time.Second)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, zmqcaptest.Handshake(c, "REQ"))
	assert.True(t, closedByPeer(c))
}

func TestAnIdlePeerOutlivesTheHandshakeTimeout(t *testing.T) {
	defer func(d time.Duration) { handshakeTimeout = d }(handshakeTimeout)
	handshakeTimeout = 200 * time.Millisecond
	sub, ep, _ := boundSub(t, testMax)
	results := receiveAll(sub)
	// A raw peer, so that nothing redials: what arrives came over the
	// one connection.
	c := attack(t, ep[len("tcp://"):], nil)
	time.Sleep(4 * handshakeTimeout)
	_, err := c.Write(zmqcaptest.Message([]byte("kv"), []byte("after a quiet while")))
	require.NoError(t, err)
	awaitMessage(t, results, "after a quiet while")
}

func TestAHugeCommandInTheHandshakeIsDropped(t *testing.T) {
	sub, ep, drops := boundSub(t, 64<<20)
	results := receiveAll(sub)
	// The greeting, then in place of READY a long command declaring 2^40 bytes.
	c, err := net.DialTimeout("tcp", ep[len("tcp://"):], 5*time.Second)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write(append(zmqcaptest.Greeting(), 0x06, 0, 0, 1, 0, 0, 0, 0, 0))
	require.NoError(t, err)
	tl := awaitDrop(t, drops)
	assert.True(t, tl.Command)
	assert.Equal(t, c.LocalAddr().String(), tl.Peer)
	assert.True(t, closedByPeer(c))

	goodPublisher(t, ep)
	awaitMessage(t, results, "good")
}

// A connection of a socket whose context carries a cpugate Link reads
// through the gate: its reader holds a token from a read that returned
// bytes until its next read, and the connection's Close gives it back.
// Without a Link the connection takes none.
func TestAConnectionOfALinkedSocketHoldsAGateToken(t *testing.T) {
	for _, linked := range []bool{true, false} {
		t.Run(map[bool]string{true: "linked", false: "no link"}[linked], func(t *testing.T) {
			g, err := cpugate.New(1)
			require.NoError(t, err)
			var link *cpugate.Link
			if linked {
				link = g.NewLink(nil)
			}
			c, _ := newCap(t, 1<<20)
			ours, peer := net.Pipe()
			t.Cleanup(func() { _ = peer.Close() })
			conn := newConn(ours, c, link)
			go func() { _, _ = peer.Write([]byte{0xff}) }()
			buf := make([]byte, 1)
			n, err := conn.Read(buf)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			if g.TryAcquire() {
				g.Release()
				assert.False(t, linked, "a linked reader holds the token after a read")
			} else {
				assert.True(t, linked, "a reader without a Link took a token")
			}
			require.NoError(t, conn.Close())
			require.True(t, g.TryAcquire(), "Close gave the token back")
			g.Release()
		})
	}
}
