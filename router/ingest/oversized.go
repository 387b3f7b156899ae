package ingest

import (
	"fmt"
	"sync"
	"time"

	"github.com/kvhash/kvhash/router/zmqcap"
)

// DefaultMaxMessageBytes caps one ZeroMQ message from an engine (or from
// anyone reaching the bound endpoint): 64 MiB. vLLM publishes one batch
// per engine step, so a batch is bounded by what one step can store or
// evict: a whole 1M-token prompt stored at once is about 5 MB of token
// ids (MessagePack, up to 5 bytes each) plus its block hashes (9 bytes
// each, 33 as sha256 bytes: 2 MB at 16-token blocks), and evicting the
// blocks of a large GPU cache (about a million) about 9-33 MB of hashes.
// 64 MiB is a few times the largest batch an engine really sends, and far
// below what would hurt the router; above it the peer's connection is
// dropped and counted (Stats.Oversized).
const DefaultMaxMessageBytes = 64 << 20

// oversizedLogEvery spaces the warnings about oversized messages: a peer
// that reconnects and sends one again and again must not flood the log.
const oversizedLogEvery = 10 * time.Second

// capped returns endpoint as the Subscriber's sockets dial or bind it:
// through its zmqcap.Cap, capped at Options.MaxMessageBytes.
func (s *Subscriber) capped(endpoint string) (string, error) {
	ep, err := s.zcap.Endpoint(endpoint)
	if err != nil {
		return "", fmt.Errorf("ingest: %s: %w", endpoint, err)
	}
	return ep, nil
}

// oversizedLog rate-limits the warnings.
type oversizedLog struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// onOversized counts and reports a peer's connection dropped by the cap
// (called from the socket's reader goroutine: it must not block).
func (s *Subscriber) onOversized(tl *zmqcap.TooLargeError) {
	s.stats.Oversized.Add(1)
	l := &s.oversized
	l.mu.Lock()
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < oversizedLogEvery {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	suppressed := l.suppressed
	l.last, l.suppressed = now, 0
	l.mu.Unlock()
	s.opts.Logger.Warn("a ZeroMQ peer sent a message over zmq_max_message_bytes; its connection is dropped",
		"peer", tl.Peer, "local", tl.Local, "frame_bytes", tl.Frame, "message_bytes", tl.Message,
		"max_bytes", tl.Max, "command", tl.Command, "suppressed_since_last", suppressed)
}
