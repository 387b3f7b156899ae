package serve

import (
	"fmt"

	"github.com/kvhash/kvhash/router/proxy"
	"github.com/kvhash/kvhash/router/route"
)

// attachProxy puts the OpenAI proxy and the dashboard (router/proxy) in
// front of the API: POST /v1/completions and /v1/chat/completions are
// routed and forwarded to engines' base URLs, GET / is the dashboard.
func (s *Server) attachProxy() error {
	px, err := proxy.New(proxy.Options{
		Indexer: s.ix, Router: s.rt, Logger: s.log, MaxBodyBytes: s.cfg.Limits.MaxBodyBytes,
		EngineToken: s.cfg.Security.EngineToken, ForwardClientAuthorization: s.cfg.Security.ForwardClientAuthorization,
		AllowedNetworks: s.nets,
		DefaultPolicy:   proxy.Policy(s.cfg.Routing.Policy),
		EngineSlots:     s.cfg.Proxy.MaxNumSeqs + s.cfg.Proxy.EngineQueue,
		QueueLimit:      s.cfg.Proxy.AdmissionQueue, QueueTimeout: s.cfg.Proxy.AdmissionTimeout,
		HoldTokens: s.cfg.Proxy.HoldTokens,
		MaxNumSeqs: s.cfg.Proxy.MaxNumSeqs, SlotBatch: s.slotBatch(),
	})
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	s.px = px
	if err := s.reg.Register(px.Collector()); err != nil {
		return fmt.Errorf("serve: proxy metrics: %w", err)
	}
	s.routes = px.Wrap(s.routes)
	return nil
}

// holdTokens is the proxy's HoldTokens: the configured threshold when
// the router scores by predicted TTFT, 0 (never held) under Dynamo's
// cost, which routes every request when it arrives as Dynamo does.
func (s *Server) holdTokens() int {
	if routerCost(s.cfg.Routing.Policy) != route.CostTTFT {
		return 0
	}
	return s.cfg.Proxy.HoldTokens
}

// slotBatch is the proxy's SlotBatch: the configured batch when the
// router scores by predicted TTFT, 0 under Dynamo's cost (its requests
// go to the engine when routed, as Dynamo sends them).
func (s *Server) slotBatch() int {
	if routerCost(s.cfg.Routing.Policy) != route.CostTTFT {
		return 0
	}
	return s.cfg.Proxy.SlotBatch
}

// Proxy is the server's proxy (its stats feed the dashboard).
func (s *Server) Proxy() *proxy.Proxy { return s.px }
