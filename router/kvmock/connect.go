package kvmock

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/kvhash/kvhash/router/zmqcap"
)

// How a connecting publisher watches its peer.
const (
	redialInterval = 250 * time.Millisecond
	watchInterval  = 100 * time.Millisecond
	// unsubscribedLimit: a connection with no matching subscription for
	// this long is taken for dead (the router restarted between two
	// looks, or it never subscribes: then redialling costs nothing).
	unsubscribedLimit = 2 * time.Second
)

// peerMessageCap caps what a peer may send kvmock's sockets: they only
// ever receive subscriptions and replay requests, a few bytes each; a
// peer that sends a larger message is disconnected (zmqcap) rather than
// let zmq4 allocate whatever its frame header claims.
const peerMessageCap = 64 << 10

// peerCap is the one Cap of every kvmock socket in the process.
var peerCap = sync.OnceValues(func() (*zmqcap.Cap, error) { return zmqcap.New(peerMessageCap, nil) })

// capped is endpoint as kvmock's sockets dial or bind it.
func capped(endpoint string) (string, error) {
	c, err := peerCap()
	if err != nil {
		return "", err
	}
	return c.Endpoint(endpoint)
}

func newPubSocket(ctx context.Context) (zmq4.Socket, error) {
	s := zmq4.NewPub(ctx, zmq4.WithLogger(discardLogger()), zmq4.WithDialerMaxRetries(0))
	if err := s.SetOption(zmq4.OptionHWM, pubHWM); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("kv events socket: set HWM: %w", err)
	}
	return s, nil
}

// connectLoop keeps a connecting publisher (an endpoint without "*": a
// router that binds one endpoint for every engine) connected, as libzmq's
// connect does for vLLM: it dials until the router is there, and when the
// router's subscription disappears (the router went away), or none comes
// for unsubscribedLimit, it starts over on a fresh socket, because
// go-zeromq does not redial a PUB by itself.
// What is published while no router listens is dropped, as by vLLM; the
// router recovers it from the replay endpoint by seq.
func (p *Publisher) connectLoop(ctx, sockCtx context.Context) {
	defer p.done.Done()
	ep := p.cfg.EventsEndpoint
	dialed, err := capped(ep)
	if err != nil { // a constant cap: not reached
		p.log.Error("kv events socket: cannot dial", "endpoint", ep, "err", err)
		return
	}
	first := true
	for ctx.Err() == nil {
		p.pubMu.Lock()
		sock := p.pub
		p.pubMu.Unlock()
		if !first {
			fresh, err := newPubSocket(sockCtx)
			if err != nil {
				p.log.Error("kv events socket: cannot make a new socket", "err", err)
				return
			}
			p.pubMu.Lock()
			old := p.pub
			p.pub, sock = fresh, fresh
			p.pubMu.Unlock()
			_ = old.Close()
		}
		first = false
		if !dialUntil(ctx, sock, dialed) {
			return
		}
		p.log.Info("kv events socket connected", "endpoint", ep)
		lost, ok := waitForLoss(ctx, func() bool {
			p.pubMu.Lock()
			defer p.pubMu.Unlock()
			return subscribedTo(p.pub, p.cfg.Topic)
		}, unsubscribedLimit)
		if !ok {
			return
		}
		if lost {
			p.log.Warn("kv events socket: the subscriber went away; reconnecting", "endpoint", ep)
		} else {
			p.log.Debug("kv events socket: no subscription yet; reconnecting", "endpoint", ep)
		}
	}
}

// dialUntil connects s, retrying until ctx ends (false then).
func dialUntil(ctx context.Context, s zmq4.Socket, endpoint string) bool {
	for {
		if err := s.Dial(endpoint); err == nil {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(redialInterval):
		}
	}
}

// waitForLoss returns once the connection looks dead: subscribed was true
// and is false again (lost), or it has never been true for limit (not
// lost: it never subscribed, or it came and went between two looks). ok
// is false when ctx ends.
func waitForLoss(ctx context.Context, subscribed func() bool, limit time.Duration) (lost, ok bool) {
	t := time.NewTicker(watchInterval)
	defer t.Stop()
	seen := false
	since := time.Now()
	for {
		select {
		case <-ctx.Done():
			return false, false
		case <-t.C:
		}
		switch now := subscribed(); {
		case now:
			seen = true
		case seen:
			return true, true
		case time.Since(since) >= limit:
			return false, true
		}
	}
}
