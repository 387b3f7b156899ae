package serve

import (
	"context"
	"net/url"
	"time"

	"github.com/kvhash/kvhash/router/internal/netguard"
)

// engineCheckTimeout bounds the name resolution of a registration.
const engineCheckTimeout = 5 * time.Second

// checkBaseURL validates a worker's base_url and returns it normalized;
// with allowed engine networks set, every address its host resolves to
// must be inside them (the proxy's dialer checks again at every
// connection, so a name that later resolves elsewhere gets nowhere).
func (s *Server) checkBaseURL(raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	norm, u, err := netguard.ParseBaseURL(raw)
	if err != nil {
		return "", badRequest("invalid_base_url", "%v", err)
	}
	if err := s.checkEngineHost(u.Hostname()); err != nil {
		return "", err
	}
	return norm, nil
}

// checkEndpointHosts applies the allowed engine networks to ZeroMQ tcp
// endpoints (kvrouter connects to those too). Other transports (ipc,
// inproc) stay on this host.
func (s *Server) checkEndpointHosts(endpoints ...string) error {
	if s.nets.Any() {
		return nil
	}
	for _, ep := range endpoints {
		u, err := url.Parse(ep)
		if ep == "" || err != nil || u.Scheme != "tcp" {
			continue // empty, or already refused by checkEndpoint
		}
		if err := s.checkEngineHost(u.Hostname()); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) checkEngineHost(host string) error {
	ctx, cancel := context.WithTimeout(context.Background(), engineCheckTimeout)
	defer cancel()
	if err := s.nets.CheckHost(ctx, host); err != nil {
		return badRequest("engine_not_allowed", "%v", err)
	}
	return nil
}
