package ingesttest

import (
	"context"
	"encoding/binary"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/stretchr/testify/require"
)

// Publisher is an engine's ZeroMQ PUB socket in a Go test: it binds (as
// vLLM and SGLang do) or dials a router's bound endpoint, and sends
// batches framed as engines frame them: the topic, the seq (8 bytes, big
// endian), the payload. Payloads come from Generator, or the test. Every
// method fails the test on an error; the socket closes when the test
// ends. (Tests that need an engine's own bytes use enginetest's Python
// publisher.)
type Publisher struct {
	t      testing.TB
	Sock   zmq4.Socket
	cancel context.CancelFunc
	once   sync.Once
}

// NewPublisher returns a PUB socket that is neither bound nor connected.
func NewPublisher(t testing.TB) *Publisher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	quiet := zmq4.WithLogger(slog.NewLogLogger(slog.DiscardHandler, slog.LevelError))
	p := &Publisher{t: t, Sock: zmq4.NewPub(ctx, quiet), cancel: cancel}
	t.Cleanup(p.Close)
	return p
}

// Listen binds ep ("tcp://127.0.0.1:0" picks a port) and returns the
// endpoint bound.
func (p *Publisher) Listen(ep string) string {
	p.t.Helper()
	require.NoError(p.t, p.Sock.Listen(ep))
	return "tcp://" + p.Sock.Addr().String()
}

// Dial connects to a router's bound endpoint.
func (p *Publisher) Dial(ep string) {
	p.t.Helper()
	require.NoError(p.t, p.Sock.Dial(ep))
}

// Send publishes one batch.
func (p *Publisher) Send(topic string, seq uint64, payload []byte) {
	p.t.Helper()
	require.NoError(p.t, p.Sock.Send(zmq4.NewMsgFrom([]byte(topic), SeqFrame(seq), payload)))
}

// Subscribed reports whether a subscription has reached the socket.
func (p *Publisher) Subscribed() bool {
	tp, ok := p.Sock.(zmq4.Topics)
	return ok && len(tp.Topics()) > 0
}

// WaitSubscribed waits until a subscription has reached the socket: a
// PUB drops what it sends before.
func (p *Publisher) WaitSubscribed() {
	p.t.Helper()
	require.Eventually(p.t, p.Subscribed, 10*time.Second, 5*time.Millisecond, "a subscriber subscribes")
}

// Close closes the socket (an engine that exits); the test's end does too.
func (p *Publisher) Close() {
	p.once.Do(func() {
		p.cancel()
		_ = p.Sock.Close()
	})
}

// SeqFrame is a batch's seq frame.
func SeqFrame(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }
