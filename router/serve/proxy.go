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

// holdTokens and slotBatch are the proxy's HoldTokens and SlotBatch: the
// configured ones when the router scores by predicted TTFT, 0 under
// Dynamo's cost (it routes and sends every request when it arrives, as
// Dynamo does).
func (s *Server) holdTokens() int { return s.underTTFT(s.cfg.Proxy.HoldTokens) }

func (s *Server) slotBatch() int { return s.underTTFT(s.cfg.Proxy.SlotBatch) }

// underTTFT is n when the router's cost is the predicted TTFT, else 0.
func (s *Server) underTTFT(n int) int {
	if routerCost(s.cfg.Routing.Policy) != route.CostTTFT {
		return 0
	}
	return n
}

// Proxy is the server's proxy (its stats feed the dashboard).
func (s *Server) Proxy() *proxy.Proxy { return s.px }
