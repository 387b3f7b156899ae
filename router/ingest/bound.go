package ingest

import (
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/go-zeromq/zmq4"

	"github.com/kvhash/kvhash/router/internal/cpugate"
)

// Resolver names the Source of a message on the bound endpoint from its
// topic (llm-d's engines publish "kv@<pod-ip>:<port>@<model>": see
// ParseLLMDTopic); false for a topic it does not know (counted as
// ReasonUnknownTopic and skipped).
type Resolver func(topic string) (Source, bool)

// Binding is the one endpoint the Subscriber binds for engines that
// connect to the router instead of binding themselves.
type Binding struct {
	Endpoint string // e.g. tcp://0.0.0.0:5557; port 0 picks a free one (see the returned address)
	Topic    string // topic prefix to subscribe to ("" = every topic)
	Resolve  Resolver
	// ReplayEndpoint gives a Source's replay endpoint ("" or nil = none).
	ReplayEndpoint func(Source) string
}

type boundEndpoint struct {
	b    Binding
	sock zmq4.Socket
	link *cpugate.Link // the socket's readers', with a gate (see dialLoop)
	done chan struct{}

	unknownLogged map[string]bool // bounded: see onUnknownTopic
}

func (b *boundEndpoint) wait() { <-b.done }

// Bind binds the one SUB endpoint engines connect to and returns its
// address. Each topic's stream is created at its first message (its
// StreamConnected then); engines' disconnects on a bound socket cannot be
// told apart by topic and are only counted.
func (s *Subscriber) Bind(b Binding) (net.Addr, error) {
	if b.Resolve == nil {
		return nil, errors.New("ingest: Binding.Resolve is nil")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("ingest: subscriber closed")
	}
	if s.bound != nil {
		return nil, errors.New("ingest: an endpoint is already bound")
	}
	endpoint, err := s.capped(b.Endpoint)
	if err != nil {
		return nil, err
	}
	ctx, link := s.linked(s.ctx)
	sock := zmq4.NewSub(ctx, zmq4.WithLogger(slog.NewLogLogger(s.opts.Logger.Handler(), slog.LevelDebug)))
	_ = sock.SetOption(zmq4.OptionSubscribe, b.Topic)
	if err := sock.Listen(endpoint); err != nil {
		_ = sock.Close()
		return nil, fmt.Errorf("ingest: bind %s: %w", b.Endpoint, err)
	}
	be := &boundEndpoint{b: b, sock: sock, link: link, done: make(chan struct{}), unknownLogged: map[string]bool{}}
	s.bound = be
	go s.boundLoop(be)
	return sock.Addr(), nil
}

func (s *Subscriber) boundLoop(be *boundEndpoint) {
	defer close(be.done)
	defer be.sock.Close()
	for {
		msg, err := be.sock.Recv()
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			// One engine's connection ended (or was dropped for an
			// oversized message: see onOversized); the socket serves the others.
			s.stats.Disconnects.Add(1)
			continue
		}
		if len(msg.Frames) == 0 {
			s.stats.Messages.Add(1)
			s.stats.countMalformed(ReasonFrames)
			continue
		}
		st := s.boundStream(be, string(msg.Frames[0]))
		if st == nil {
			s.stats.Messages.Add(1)
			s.stats.countMalformed(ReasonUnknownTopic)
			continue
		}
		if st.enqueue(item{kind: itemMessage, frames: msg.Frames}, be.link) != nil && s.ctx.Err() != nil {
			return
		}
	}
}

// boundStream returns the stream of a topic, created at its first message.
func (s *Subscriber) boundStream(be *boundEndpoint, topic string) *stream {
	src, ok := be.b.Resolve(topic)
	if !ok {
		s.onUnknownTopic(be, topic)
		return nil
	}
	src.Topic = topic
	if src.Endpoint == "" {
		src.Endpoint = be.b.Endpoint
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	if st, ok := s.streams[keyOf(src)]; ok {
		return st
	}
	replay := ""
	if be.b.ReplayEndpoint != nil {
		replay = be.b.ReplayEndpoint(src)
	}
	st := s.newStream(src, replay)
	s.streams[keyOf(src)] = st
	s.shareQueuesLocked()
	st.inbox <- item{kind: itemConnected} // a fresh queue: never blocks
	st.start()
	return st
}

// onUnknownTopic logs an unknown topic once (up to 1000 distinct topics,
// so a flood of forged topics cannot grow memory); each is counted.
func (s *Subscriber) onUnknownTopic(be *boundEndpoint, topic string) {
	if be.unknownLogged[topic] || len(be.unknownLogged) >= 1000 {
		return
	}
	be.unknownLogged[topic] = true
	s.opts.Logger.Warn("kv events on the bound endpoint with an unknown topic are skipped",
		"topic", topic, "endpoint", be.b.Endpoint)
}
