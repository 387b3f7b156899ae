package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/route"
	"github.com/kvhash/kvhash/router/route/admit"
)

// Holding (policy kvrouter, Options.HoldTokens > 0): while every engine a
// request could go to already has HoldTokens of prefill the router sent
// it and has not seen start, the request waits in the proxy before it is
// routed, and held requests go by highest response ratio over their
// predicted prefill (router/route/admit), not first come first served
// inside the engines. The slots' admission queue (admission.go) still
// applies after: holding is about the order of prefills, slots about how
// many requests an engine may have.

// gate returns model's holding gate (one per model: a model's engines
// are its fleet), made on first use.
func (p *Proxy) gate(model string) *admit.Gate {
	return p.held.get(model, func() *admit.Gate {
		key, hold := indexer.ModelKey{Model: model}, uint64(p.opts.HoldTokens)
		return admit.NewGate(func() bool {
			sat, err := p.rt.Saturated(key, p.reachable, hold)
			return err == nil && sat
		}, admit.GateOptions{MaxHeld: p.opts.QueueLimit, MaxWait: p.opts.QueueTimeout})
	})
}

// holdKV waits while the request's model is saturated (policy kvrouter
// only). It returns done, to call once the request is routed or given
// up; an error (a 429, or the client's context) when it is not admitted.
func (p *Proxy) holdKV(ctx context.Context, w http.ResponseWriter, pol Policy, req clientRequest, tokens []uint32) (func(), error) {
	if pol != PolicyKV {
		return func() {}, nil
	}
	done, err := p.Hold(ctx, req.Model, tokens, req.CacheSalt)
	if errors.Is(err, ErrSaturated) {
		p.stats.rejected(pol)
		return nil, p.saturated(w, req.Model, "%s", strings.TrimPrefix(err.Error(), ErrSaturated.Error()+": "))
	}
	return done, err
}

// Hold holds a request for model while every engine of it has
// Options.HoldTokens of prefill queued (nothing when HoldTokens is 0),
// for the proxy and for another front end routing with policy kvrouter
// (the endpoint picker). done is to be called once the request is routed
// or given up. An error wraps ErrSaturated when the request is refused
// (too many held, or held past QueueTimeout); else it is ctx's.
func (p *Proxy) Hold(ctx context.Context, model string, tokens []uint32, cacheSalt string) (done func(), err error) {
	if p.opts.HoldTokens <= 0 {
		return func() {}, nil
	}
	done, held, err := p.gate(model).Enter(ctx, func() float64 {
		e, err := p.rt.Estimate(route.Request{Model: model, TokenIDs: tokens, CacheSalt: cacheSalt, Eligible: p.reachable})
		if err != nil {
			return 0 // the floor: it goes by its wait
		}
		return e.ServiceS
	})
	if held {
		p.stats.held(PolicyKV)
	}
	switch {
	case err == nil:
		return done, nil
	case errors.Is(err, admit.ErrFull):
		return nil, fmt.Errorf("%w: %d requests are held while every engine has a step's prefill queued", ErrSaturated, p.opts.QueueLimit)
	case errors.Is(err, admit.ErrTimeout):
		return nil, fmt.Errorf("%w: held %v while every engine had a step's prefill queued", ErrSaturated, p.opts.QueueTimeout)
	default:
		return nil, err
	}
}

// Held is the number of requests held before routing now (every model).
func (p *Proxy) Held() int {
	return p.held.sum(func(g *admit.Gate) int { return g.Held() })
}

// Kick lets a held request of model go when load ended there (a first
// token, a request's end); the endpoint picker calls it for its own.
func (p *Proxy) Kick(model string) {
	if p.opts.HoldTokens <= 0 {
		return
	}
	if g := p.held.find(model); g != nil {
		g.Kick()
	}
}
