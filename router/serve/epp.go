package serve

import (
	"errors"
	"fmt"
	"net"

	"github.com/kvhash/kvhash/router/epp"
)

// attachEPP builds the gateway endpoint picker (router/epp) over the
// server's indexer and router when --epp-listen is set; its metrics join
// the server's registry.
func (s *Server) attachEPP() error {
	c := s.cfg.EPP
	if c.Listen == "" {
		return nil
	}
	opts := epp.Options{
		Indexer: s.ix, Router: s.rt, Tokenize: s.px.PromptTokens, Logger: s.log, Registerer: s.reg,
		MaxInFlightPerWorker: c.MaxInFlightPerWorker, Fallbacks: c.Fallbacks, MaxBodyBytes: s.cfg.Limits.MaxBodyBytes,
	}
	if c.MaxInFlightPerWorker == 0 {
		// The proxy's backpressure: the picker's requests take the same
		// per-engine slots (--max-num-seqs + --engine-queue) as the
		// proxy's, and a model whose engines are all full, or whose
		// requests wait in the proxy's queue, is shed with a 429.
		opts.Slots, opts.Admit = s.px, s.px.Admit
		// The proxy's holding (predicted-TTFT routing only), for the
		// picker's requests too.
		opts.Hold, opts.Kick = s.px.Hold, s.px.Kick
	}
	if c.TLS {
		tc, err := epp.SelfSignedTLS("localhost")
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		opts.TLS = tc
	}
	p, err := epp.New(opts)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	s.epp = p
	return nil
}

// startEPP listens on --epp-listen and serves the picker.
func (s *Server) startEPP() error {
	if s.epp == nil {
		return nil
	}
	ln, err := net.Listen("tcp", s.cfg.EPP.Listen)
	if err != nil {
		return fmt.Errorf("serve: epp listen %s: %w", s.cfg.EPP.Listen, err)
	}
	s.eppAddr = ln.Addr()
	go func() {
		if err := s.epp.Serve(ln); err != nil && !errors.Is(err, net.ErrClosed) {
			s.log.Error("kvrouter: the endpoint picker stopped", "error", err)
		}
	}()
	s.log.Info("kvrouter: endpoint picker serving", "listen", ln.Addr().String(), "tls", s.cfg.EPP.TLS)
	return nil
}

func (s *Server) stopEPP() {
	if s.epp != nil {
		s.epp.Stop()
	}
}

// EPPAddr is the endpoint picker's address (--epp-listen), nil if none.
func (s *Server) EPPAddr() net.Addr { return s.eppAddr }
