package kvmock

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"
)

// pubHWM is vLLM's default high-water mark for its PUB socket.
const pubHWM = 100_000

// Publisher is vLLM's ZmqEventPublisher, simulated: events collected during
// one scheduler step go out as one batch, [topic, seq, payload], seq
// counting from 0 per process; the last ReplayBuffer batches are kept for
// the replay endpoint.
type Publisher struct {
	cfg    Config
	enc    wireEncoder
	log    *slog.Logger
	replay *replayServer // nil without a replay endpoint

	// pub is the PUB socket. A connecting publisher replaces it when its
	// peer goes away (see connectLoop), hence the lock.
	pubMu sync.Mutex
	pub   zmq4.Socket
	bound bool

	mu      sync.Mutex
	pending []Event

	buf     *batchRing
	nextSeq uint64 // only the step loop touches it

	stopLoop    context.CancelFunc // the step loop and a pending connect
	closeSocket context.CancelFunc // the sockets' context, last
	done        sync.WaitGroup
}

// NewPublisher opens the PUB socket (binding or connecting as vLLM does)
// and the replay socket, and starts the step loop.
func NewPublisher(cfg Config, log *slog.Logger) (*Publisher, error) {
	if log == nil {
		log = slog.Default()
	}
	sockCtx, closeSocket := context.WithCancel(context.Background())
	ctx, stopLoop := context.WithCancel(sockCtx)
	cancel := func() { stopLoop(); closeSocket() }
	p := &Publisher{
		cfg:         cfg,
		enc:         wireEncoder{format: cfg.EventFormat, hashes: cfg.HashFormat, blockSize: cfg.BlockSize},
		log:         log,
		buf:         newBatchRing(cfg.ReplayBuffer),
		stopLoop:    stopLoop,
		closeSocket: closeSocket,
	}
	p.bound = bindsEndpoint(cfg.EventsEndpoint)
	pub, err := newPubSocket(sockCtx)
	if err != nil {
		cancel()
		return nil, err
	}
	p.pub = pub
	if p.bound {
		ep, err := capped(cfg.EventsEndpoint)
		if err == nil {
			err = p.pub.Listen(ep)
		}
		if err != nil {
			cancel()
			_ = p.pub.Close()
			return nil, fmt.Errorf("kv events socket: bind %s: %w", cfg.EventsEndpoint, err)
		}
	} else {
		p.done.Add(1)
		go p.connectLoop(ctx, sockCtx)
	}
	if cfg.ReplayEndpoint != "" {
		r, err := newReplayServer(sockCtx, cfg.ReplayEndpoint, cfg.ReplayShape, cfg.Topic, p.buf, log)
		if err != nil {
			cancel()
			_ = p.pub.Close()
			return nil, err
		}
		p.replay = r
	}
	p.done.Add(1)
	go p.stepLoop(ctx)
	return p, nil
}

// bindsEndpoint is vLLM's rule: bind when the endpoint has a wildcard, an
// IPv6 "::" or is ipc/inproc; connect otherwise.
func bindsEndpoint(ep string) bool {
	return strings.Contains(ep, "*") || strings.Contains(ep, "::") ||
		strings.HasPrefix(ep, "ipc://") || strings.HasPrefix(ep, "inproc://")
}

// Emit queues an event for the current step (EventSink).
func (p *Publisher) Emit(ev Event) {
	p.mu.Lock()
	p.pending = append(p.pending, ev)
	p.mu.Unlock()
}

func (p *Publisher) stepLoop(ctx context.Context) {
	defer p.done.Done()
	t := time.NewTicker(p.cfg.StepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.flush()
		}
	}
}

// flush publishes the events collected since the last step, if any.
func (p *Publisher) flush() {
	p.mu.Lock()
	events := p.pending
	p.pending = nil
	p.mu.Unlock()
	if len(events) == 0 {
		return
	}
	ts := float64(time.Now().UnixNano()) / 1e9
	payload, err := p.enc.encodeBatch(ts, events, p.cfg.DPRank)
	if err != nil {
		// Cannot happen with events the cache built; losing a batch
		// silently would desync the router, so say so loudly.
		p.log.Error("kv events: batch dropped", "events", len(events), "err", err)
		return
	}
	seq := p.nextSeq
	p.nextSeq++
	seqFrame := seqBytes(seq)
	p.buf.add(bufferedBatch{seq: seq, payload: payload})
	msg := zmq4.NewMsgFrom([]byte(p.cfg.Topic), seqFrame, payload)
	p.pubMu.Lock()
	err = p.pub.SendMulti(msg)
	p.pubMu.Unlock()
	if err != nil {
		p.log.Warn("kv events: send failed (kept for replay)", "seq", seq, "err", err)
	}
}

// Close publishes what is pending and closes the sockets.
func (p *Publisher) Close() error {
	p.stopLoop()
	p.done.Wait()
	p.flush()
	// The PUB socket sends from its own queue; give it a moment to drain
	// (vLLM's shutdown waits up to a second for its queue too).
	time.Sleep(50 * time.Millisecond)
	p.pubMu.Lock()
	err := ignoreClosed(p.pub.Close())
	p.pubMu.Unlock()
	if p.replay != nil {
		err = errors.Join(err, ignoreClosed(p.replay.close()))
	}
	p.closeSocket()
	return err
}

// ignoreClosed drops the errors go-zeromq reports for connections its own
// shutdown already closed.
func ignoreClosed(err error) error {
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// EventsAddr is the address the PUB socket listens on (nil when it
// connects): with port 0 or *, the port the system chose.
func (p *Publisher) EventsAddr() net.Addr {
	if !p.bound {
		return nil
	}
	p.pubMu.Lock()
	defer p.pubMu.Unlock()
	return p.pub.Addr()
}

// ReplayAddr is the replay socket's listening address (nil without one).
func (p *Publisher) ReplayAddr() net.Addr {
	if p.replay == nil {
		return nil
	}
	return p.replay.sock.Addr()
}

// Subscribed reports whether a subscriber is connected with a subscription
// that matches the topic (tests and the demo wait for it: PUB drops what it
// sends before that).
func (p *Publisher) Subscribed() bool {
	p.pubMu.Lock()
	defer p.pubMu.Unlock()
	return subscribedTo(p.pub, p.cfg.Topic)
}

// subscribedTo reports whether a peer of s subscribes to topic.
func subscribedTo(s zmq4.Socket, topic string) bool {
	t, ok := s.(zmq4.Topics)
	if !ok {
		return false
	}
	for _, sub := range t.Topics() {
		if strings.HasPrefix(topic, sub) {
			return true
		}
	}
	return false
}

// NextSeq is the seq the next batch will carry.
func (p *Publisher) NextSeq() uint64 {
	return p.buf.next()
}

func seqBytes(seq uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, seq)
	return b
}
