package indexerbench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"
)

// pubHWM is vLLM's default high-water mark (messages) on its PUB socket;
// a stream here never queues that many, so nothing is dropped.
const pubHWM = 100_000

// Publishers are one ZeroMQ PUB socket per engine, bound on loopback as
// vLLM binds tcp://*:port, sending [topic, seq, payload] with seq from 0.
type Publishers struct {
	socks  []zmq4.Socket
	cancel context.CancelFunc
}

// OpenPublishers binds n PUB sockets on 127.0.0.1, ports chosen by the
// system.
func OpenPublishers(n int) (*Publishers, error) {
	ctx, cancel := context.WithCancel(context.Background())
	p := &Publishers{cancel: cancel}
	for i := range n {
		s := zmq4.NewPub(ctx, zmq4.WithLogger(log.New(io.Discard, "", 0)))
		if err := s.SetOption(zmq4.OptionHWM, pubHWM); err != nil {
			_ = p.Close()
			return nil, fmt.Errorf("engine %d: set HWM: %w", i, err)
		}
		if err := s.Listen("tcp://127.0.0.1:0"); err != nil {
			_ = p.Close()
			return nil, fmt.Errorf("engine %d: bind: %w", i, err)
		}
		p.socks = append(p.socks, s)
	}
	return p, nil
}

// Endpoints are the sockets' endpoints, tcp://127.0.0.1:port, by engine.
func (p *Publishers) Endpoints() []string {
	out := make([]string, len(p.socks))
	for i, s := range p.socks {
		out[i] = "tcp://" + s.Addr().String()
	}
	return out
}

// WaitSubscribed waits until every socket has a subscriber for the empty
// topic (a PUB drops what it sends before that).
func (p *Publishers) WaitSubscribed(ctx context.Context) error {
	for i, s := range p.socks {
		for !subscribed(s) {
			select {
			case <-ctx.Done():
				return fmt.Errorf("engine %d: no subscriber: %w", i, ctx.Err())
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	return nil
}

func subscribed(s zmq4.Socket) bool {
	t, ok := s.(zmq4.Topics)
	if !ok {
		return false
	}
	for _, topic := range t.Topics() {
		if topic == "" {
			return true
		}
	}
	return false
}

// Publish sends every engine's messages, from seq 0. rate is stored
// blocks per second over all engines (each engine paces at rate/engines,
// message by message); 0 sends as fast as the sockets take them (a
// burst: the PUB queue fills at once and drains at the subscriber's
// pace). It returns once every message is handed to its socket.
func (p *Publishers) Publish(ctx context.Context, st *Stream, rate float64) error {
	if len(st.Messages) != len(p.socks) {
		return fmt.Errorf("%d engines' messages for %d sockets", len(st.Messages), len(p.socks))
	}
	start := time.Now()
	errs := make([]error, len(p.socks))
	var wg sync.WaitGroup
	for e, s := range p.socks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[e] = publishEngine(ctx, s, st.Messages[e], start, rate/float64(len(p.socks)))
		}()
	}
	wg.Wait()
	for e, err := range errs {
		if err != nil {
			return fmt.Errorf("engine %d: %w", e, err)
		}
	}
	return nil
}

func publishEngine(ctx context.Context, s zmq4.Socket, msgs []Message, start time.Time, rate float64) error {
	sent := 0
	for seq, m := range msgs {
		if rate > 0 {
			due := start.Add(time.Duration(float64(sent) / rate * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(d):
				}
			}
		}
		seqFrame := make([]byte, 8)
		binary.BigEndian.PutUint64(seqFrame, uint64(seq))
		if err := s.SendMulti(zmq4.NewMsgFrom(nil, seqFrame, m.Payload)); err != nil {
			return fmt.Errorf("send seq %d: %w", seq, err)
		}
		sent += m.Stored
	}
	return nil
}

// Close closes the sockets. A connection its subscriber closed first
// (the indexer stopped) is not an error.
func (p *Publishers) Close() error {
	var first error
	for _, s := range p.socks {
		if err := s.Close(); err != nil && !errors.Is(err, net.ErrClosed) && first == nil {
			first = err
		}
	}
	p.cancel()
	return first
}
