package proxy

import (
	"net/http"
	"net/textproto"
	"strings"
)

// authorize sets what an engine request carries for credentials: the
// client's own Authorization when so configured and the client sent one
// (client nil: a request of kvrouter's own, a health check or a
// tokenize), else the engine token, else nothing. A client's header is
// never forwarded by default: it may be kvrouter's own token, or a
// credential meant for another service.
func (p *Proxy) authorize(up, client *http.Request) {
	up.Header.Del("Authorization")
	if client != nil && p.opts.ForwardClientAuthorization {
		if v := client.Header.Get("Authorization"); v != "" {
			up.Header.Set("Authorization", v)
			return
		}
	}
	if p.opts.EngineToken != "" {
		up.Header.Set("Authorization", "Bearer "+p.opts.EngineToken)
	}
}

// dropHopHeaders removes the per-connection headers of an engine's
// answer before it is copied to the client: the fixed ones (hopHeaders)
// and every header the engine's Connection header names (RFC 9110
// 7.6.1), which are its connection's business only.
func dropHopHeaders(h http.Header) {
	for _, v := range h.Values("Connection") {
		for name := range strings.SplitSeq(v, ",") {
			if name = textproto.TrimString(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
}
