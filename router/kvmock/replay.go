package kvmock

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
)

// endSeq is the replay end marker's seq frame: -1 as 8 big-endian bytes.
var endSeq = bytes.Repeat([]byte{0xFF}, 8)

// replayServer answers replay requests on a ROUTER socket as vLLM's
// publisher does: a DEALER sends ["", start_seq (8 bytes big-endian)] (a
// REQ sends the bare seq, which arrives the same way); the server sends
// every buffered batch with seq >= start_seq, then an end marker. Requests
// of another shape are logged and ignored, as vLLM ignores them.
type replayServer struct {
	sock  zmq4.Socket
	shape ReplayShape
	topic []byte
	buf   *batchRing
	log   *slog.Logger
	done  sync.WaitGroup

	closing atomic.Bool
}

func newReplayServer(ctx context.Context, endpoint string, shape ReplayShape, topic string, buf *batchRing, log *slog.Logger) (*replayServer, error) {
	s := &replayServer{
		sock:  zmq4.NewRouter(ctx, zmq4.WithLogger(discardLogger())),
		shape: shape,
		topic: []byte(topic),
		buf:   buf,
		log:   log,
	}
	ep, err := capped(endpoint)
	if err == nil {
		err = s.sock.Listen(ep)
	}
	if err != nil {
		_ = s.sock.Close()
		return nil, fmt.Errorf("replay socket: bind %s: %w", endpoint, err)
	}
	s.done.Add(1)
	go s.serve(ctx)
	return s, nil
}

func (s *replayServer) serve(ctx context.Context) {
	defer s.done.Done()
	for {
		msg, err := s.sock.Recv()
		if err != nil {
			if ctx.Err() != nil || s.closing.Load() {
				return
			}
			s.log.Warn("replay socket: receive failed", "err", err)
			time.Sleep(10 * time.Millisecond) // never spin on a socket that keeps failing
			continue
		}
		if err := s.answerSafely(msg.Frames); err != nil {
			s.log.Warn("replay request not answered", "err", err)
		}
	}
}

// answerSafely is answer with a panic turned into an error: one odd
// request must not stop the replay endpoint.
func (s *replayServer) answerSafely(frames [][]byte) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic answering a replay request: %v", v)
		}
	}()
	return s.answer(frames)
}

// answer handles one request: [identity, "", start_seq].
func (s *replayServer) answer(frames [][]byte) error {
	if len(frames) != 3 || len(frames[1]) != 0 || len(frames[2]) != 8 {
		return fmt.Errorf("want [identity, empty, 8-byte seq], got %d frames", len(frames))
	}
	id := frames[0]
	start := binary.BigEndian.Uint64(frames[2])
	for _, b := range s.buf.since(start) {
		if err := s.send(id, seqBytes(b.seq), b.payload); err != nil {
			return fmt.Errorf("replay from %d: send seq %d: %w", start, b.seq, err)
		}
	}
	if err := s.send(id, endSeq, []byte{}); err != nil {
		return fmt.Errorf("replay from %d: send end marker: %w", start, err)
	}
	return nil
}

// send writes one reply in the configured shape: ["", topic, seq, payload]
// (vLLM >= 0.26; the end marker has an empty topic) or ["", seq, payload].
func (s *replayServer) send(id, seq, payload []byte) error {
	frames := [][]byte{id, {}}
	if s.shape == ReplayShape4 {
		topic := s.topic
		if bytes.Equal(seq, endSeq) {
			topic = []byte{}
		}
		frames = append(frames, topic)
	}
	frames = append(frames, seq, payload)
	return s.sock.SendMulti(zmq4.NewMsgFrom(frames...))
}

func (s *replayServer) close() error {
	s.closing.Store(true)
	err := s.sock.Close()
	s.done.Wait()
	return err
}
