package kvmock

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
)

// Server is one simulated engine: the engine, its event publisher (nil
// when no events endpoint is configured) and its HTTP API.
type Server struct {
	Engine    *Engine
	Publisher *Publisher
	Handler   http.Handler
	// Health is what GET /health answers; tests and demos flip it to
	// take the engine out of a router's rotation without stopping it.
	Health *HealthSwitch
	// Root is the engine's root digest (vLLM's NONE_HASH): fixed by the
	// seed, or random per start with Unstable.
	Root Digest
}

// NewServer builds an engine from cfg: its block ids, its publisher (the
// sockets are open when it returns) and its HTTP handler.
func NewServer(cfg Config, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.Default()
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kvmock config: %w", err)
	}
	ids, err := NewBlockIDs(cfg)
	if err != nil {
		return nil, err
	}
	s := &Server{Root: ids.Root()}
	var sink EventSink = discardEvents{}
	if cfg.EventsEndpoint != "" {
		p, err := NewPublisher(cfg, log)
		if err != nil {
			return nil, err
		}
		s.Publisher, sink = p, p
	}
	e, err := NewEngine(cfg, ids, sink)
	if err != nil {
		return nil, errors.Join(err, s.Close())
	}
	s.Engine = e
	s.Health = &HealthSwitch{}
	s.Handler = NewHandler(e, s.Health, log)
	return s, nil
}

// Close publishes pending events and closes the sockets. Stop the HTTP
// server first so no request adds events after.
func (s *Server) Close() error {
	if s.Publisher == nil {
		return nil
	}
	return s.Publisher.Close()
}
