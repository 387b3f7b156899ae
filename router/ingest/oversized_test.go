package ingest

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/kvhash/kvhash/router/ingest/ingesttest"
	"github.com/kvhash/kvhash/router/internal/logtest"
	"github.com/kvhash/kvhash/router/zmqcap"
	"github.com/kvhash/kvhash/router/zmqcap/zmqcaptest"
)

// These tests are issue 24's frame-size attack on kvrouter's ZeroMQ
// sockets, sent byte for byte over raw TCP: the ZMTP 3.0 greeting, a
// READY as a PUB, then a long frame header (flags 0x02) declaring 2^40
// bytes. Unguarded, zmq4 allocates the 2^40 bytes and this test binary
// dies ("fatal error: runtime: out of memory"): that is the failing
// signal. Guarded, the peer is dropped and counted, and real publishers'
// batches still arrive.

// guardedSubscriber is a Subscriber capped at max (0: the default) whose
// log is returned.
func guardedSubscriber(t *testing.T, h Handler, max int64) (*Subscriber, *logtest.Buffer) {
	t.Helper()
	logs := &logtest.Buffer{}
	s, err := New(Options{
		Handler:         h,
		Logger:          slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
		ReplayTimeout:   2 * time.Second,
		ReconnectMin:    20 * time.Millisecond,
		ReconnectMax:    200 * time.Millisecond,
		MaxMessageBytes: max,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s, logs
}

// bindAny binds the subscriber's endpoint on a free loopback port; every
// topic is worker 1 of model m.
func bindAny(t *testing.T, s *Subscriber) string {
	t.Helper()
	addr, err := s.Bind(Binding{
		Endpoint: "tcp://127.0.0.1:0",
		Resolve:  func(string) (Source, bool) { return Source{Model: "m", WorkerID: 1}, true },
	})
	require.NoError(t, err)
	return addr.String()
}

// batchPayload is a batch storing one block of hash seq+1, padded with an
// unknown key (ignored by the decoder) of pad bytes.
func batchPayload(t *testing.T, seq uint64, pad int) []byte {
	t.Helper()
	b := batchOf(storedEv([]uint64{seq + 1}, nil, 0))
	b["ts"] = 1.7e9 // a float64: 9 bytes whatever its value
	if pad > 0 {
		b["pad"] = make([]byte, pad)
	}
	payload, err := msgpack.Marshal(b)
	require.NoError(t, err)
	return payload
}

// realPublisher is a zmq4 PUB, as an engine's, that dials or binds ep,
// once the subscriber has subscribed.
func realPublisher(t *testing.T, ep string, dial bool) *ingesttest.Publisher {
	t.Helper()
	pub := ingesttest.NewPublisher(t)
	if dial {
		pub.Dial(ep)
	} else {
		pub.Listen(ep)
	}
	pub.WaitSubscribed()
	return pub
}

func publish(t *testing.T, pub *ingesttest.Publisher, seq uint64) {
	t.Helper()
	pub.Send("kv", seq, batchPayload(t, seq, 0))
}

// attack sends the bytes to conn: the greeting and READY of a
// PUB, then a long final frame header declaring 2^40 bytes.
func attack(t *testing.T, conn net.Conn) {
	t.Helper()
	require.NoError(t, zmqcaptest.Handshake(conn, "PUB"))
	header := []byte{0x02, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00} // 2^40, big-endian
	require.Equal(t, zmqcaptest.LongHeader(1<<40, false), header)
	_, err := conn.Write(header)
	require.NoError(t, err)
}

// droppedByPeer reports whether the other side closed conn (EOF or a
// reset) within a few seconds; what it sent before is skipped.
func droppedByPeer(conn net.Conn) bool {
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	return err == nil || !(errors.As(err, &ne) && ne.Timeout())
}

func TestBoundEndpointSurvivesTheFrameSizeAttack(t *testing.T) {
	rec := newRecorder()
	s, logs := guardedSubscriber(t, rec, 0) // the default cap, 64 MiB
	addr := bindAny(t, s)
	pub := realPublisher(t, "tcp://"+addr, true)
	publish(t, pub, 0)
	rec.waitFor(t, "seq 0", func() bool { return len(rec.batches) == 1 })

	attacker, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	defer attacker.Close()
	attack(t, attacker)

	require.Eventually(t, func() bool { return s.Stats().Oversized.Load() == 1 }, 10*time.Second, 10*time.Millisecond)
	assert.True(t, droppedByPeer(attacker), "the attacker's connection is dropped")
	publish(t, pub, 1)
	rec.waitFor(t, "seq 1 after the attack", func() bool { return len(rec.batches) == 2 })
	assert.Equal(t, []uint64{0, 1}, rec.seqs())
	log := logs.String()
	assert.Contains(t, log, "level=WARN")
	assert.Contains(t, log, "peer="+attacker.LocalAddr().String())
	assert.Contains(t, log, "frame_bytes=1099511627776")
}

func TestDialedEndpointSurvivesTheFrameSizeAttack(t *testing.T) {
	// The registered worker's endpoint is the attacker's listener.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ep := "tcp://" + l.Addr().String()
	served := make(chan net.Conn, 1)
	go func() {
		defer close(served)
		c, err := l.Accept()
		if err != nil {
			return
		}
		if zmqcaptest.Handshake(c, "PUB") == nil {
			_, _ = c.Write(zmqcaptest.LongHeader(1<<40, false))
		}
		served <- c
	}()

	rec := newRecorder()
	s, logs := guardedSubscriber(t, rec, 0)
	_, err = s.Subscribe(Subscription{Model: "m", WorkerID: 1, Endpoint: ep})
	require.NoError(t, err)
	c := <-served
	require.NotNil(t, c, "the subscriber dialled the endpoint")
	defer c.Close()
	require.Eventually(t, func() bool { return s.Stats().Oversized.Load() == 1 }, 10*time.Second, 10*time.Millisecond)
	assert.True(t, droppedByPeer(c), "the attacker's connection is dropped")
	assert.Contains(t, logs.String(), "peer="+c.LocalAddr().String())

	// A real engine takes the endpoint over: the subscriber redials it.
	require.NoError(t, l.Close())
	pub := realPublisher(t, ep, false)
	publish(t, pub, 0)
	publish(t, pub, 1)
	rec.waitFor(t, "both batches after the attack", func() bool { return len(rec.batches) == 2 })
	assert.Equal(t, []uint64{0, 1}, rec.seqs())
}

// TestMessageCapBoundary: a message counted at exactly the cap is
// delivered; one byte more and its peer is dropped, the other peers heard.
func TestMessageCapBoundary(t *testing.T) {
	const max = 8192
	rec := newRecorder()
	s, _ := guardedSubscriber(t, rec, max)
	addr := bindAny(t, s)

	// topic + seq + payload, each frame counting zmqcap.FrameOverhead.
	sized := func(seq uint64, counted int) [][]byte {
		base := batchPayload(t, seq, 300)
		payload := batchPayload(t, seq, 300+counted-(2+8+len(base)+3*zmqcap.FrameOverhead))
		frames := [][]byte{[]byte("kv"), ingesttest.SeqFrame(seq), payload}
		require.Equal(t, counted, 2+8+len(payload)+3*zmqcap.FrameOverhead)
		return frames
	}
	dial := func() net.Conn {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		require.NoError(t, zmqcaptest.Handshake(c, "PUB"))
		return c
	}

	under := dial()
	_, err := under.Write(zmqcaptest.Message(sized(0, max)...))
	require.NoError(t, err)
	rec.waitFor(t, "the message at the cap", func() bool { return len(rec.batches) == 1 })

	over := dial()
	_, err = over.Write(zmqcaptest.Message(sized(1, max+1)...))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.Stats().Oversized.Load() == 1 }, 10*time.Second, 10*time.Millisecond)
	assert.True(t, droppedByPeer(over), "the peer over the cap is dropped")

	_, err = under.Write(zmqcaptest.Message(sized(1, max-1)...))
	require.NoError(t, err)
	rec.waitFor(t, "the first peer's next message", func() bool { return len(rec.batches) == 2 })
	assert.Equal(t, []uint64{0, 1}, rec.seqs())
	assert.Equal(t, uint64(1), s.Stats().Oversized.Load())
}

func TestNewRejectsACapOutOfRange(t *testing.T) {
	for _, max := range []int64{-1, zmqcap.MinLimit - 1, zmqcap.MaxLimit + 1} {
		_, err := New(Options{Handler: newRecorder(), MaxMessageBytes: max})
		if assert.Error(t, err, "cap %d", max) {
			assert.True(t, strings.Contains(err.Error(), "MaxMessageBytes"), err.Error())
		}
	}
}

func TestReplayEndpointSurvivesTheFrameSizeAttack(t *testing.T) {
	// The registered worker's replay endpoint answers a replay request
	// with the attack.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	served := make(chan net.Conn, 1)
	go func() {
		defer close(served)
		c, err := l.Accept()
		if err != nil {
			return
		}
		if zmqcaptest.Handshake(c, "ROUTER") == nil {
			_, _ = c.Write(zmqcaptest.LongHeader(1<<40, false))
		}
		served <- c
	}()

	rec := newRecorder()
	s, logs := guardedSubscriber(t, rec, 0)
	pubEP := "tcp://" + freeLoopbackAddr(t)
	srcs, err := s.Subscribe(Subscription{Model: "m", WorkerID: 1, Endpoint: pubEP, ReplayEndpoint: "tcp://" + l.Addr().String()})
	require.NoError(t, err)
	pub := realPublisher(t, pubEP, false)
	publish(t, pub, 0)
	rec.waitFor(t, "seq 0", func() bool { return len(rec.batches) == 1 })

	require.NoError(t, s.RequestReplay(srcs[0], 0))
	c := <-served
	require.NotNil(t, c, "the subscriber dialled the replay endpoint")
	defer c.Close()
	require.Eventually(t, func() bool { return s.Stats().Oversized.Load() == 1 }, 10*time.Second, 10*time.Millisecond)
	rec.waitFor(t, "the replay reported lost", func() bool { return rec.countLocked(StreamGapLost) == 1 })
	assert.Contains(t, logs.String(), "peer="+c.LocalAddr().String())

	publish(t, pub, 1)
	rec.waitFor(t, "seq 1 after the attack", func() bool { return len(rec.batches) == 2 })
	assert.Equal(t, []uint64{0, 1}, rec.seqs())
}

// freeLoopbackAddr is a loopback host:port free a moment ago.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// TestOversizedWarningsAreRateLimited: every drop is counted, one warning
// per oversizedLogEvery is logged.
func TestOversizedWarningsAreRateLimited(t *testing.T) {
	s, logs := guardedSubscriber(t, newRecorder(), 0)
	addr := bindAny(t, s)
	for i := range 3 {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		require.NoError(t, err)
		attack(t, c)
		require.Eventually(t, func() bool { return s.Stats().Oversized.Load() == uint64(i+1) }, 10*time.Second, 10*time.Millisecond)
		_ = c.Close()
	}
	assert.Equal(t, 1, strings.Count(logs.String(), "over zmq_max_message_bytes"), logs.String())
}

// TestAHugeCommandInPlaceOfREADYIsCounted: the attack inside the
// handshake, which zmq4 itself reports to no one, is counted too.
func TestAHugeCommandInPlaceOfREADYIsCounted(t *testing.T) {
	rec := newRecorder()
	s, logs := guardedSubscriber(t, rec, 0)
	addr := bindAny(t, s)
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write(append(zmqcaptest.Greeting(), 0x06, 0, 0, 1, 0, 0, 0, 0, 0)) // a long command, 2^40 bytes
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.Stats().Oversized.Load() == 1 }, 10*time.Second, 10*time.Millisecond)
	assert.True(t, droppedByPeer(c))
	assert.Contains(t, logs.String(), "command=true")

	pub := realPublisher(t, "tcp://"+addr, true)
	publish(t, pub, 0)
	rec.waitFor(t, "a batch after the attack", func() bool { return len(rec.batches) == 1 })
}
