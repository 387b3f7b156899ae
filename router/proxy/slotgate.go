package proxy

import (
	"context"

	"github.com/kvhash/kvhash/router/route/admit"
)

// A full engine's admissions in batches (policy kvrouter, SlotBatch > 0):
// vLLM admits a waiting request as soon as one of its max_num_seqs slots
// frees, so an engine that runs all its slots with a queue prefills a
// request or two in nearly every step, and each such step pays a prefill
// step's fixed cost. Once an engine runs MaxNumSeqs of the proxy's
// kvrouter requests, the next ones routed to it wait here, in routing
// order, until SlotBatch of its slots are free, and go together: one step
// prefills them (docs/guides/routing.md, "A full engine's admissions").
// The choice of engine is made before (pick); EngineSlots' backpressure
// still bounds what an engine may have from the proxy, waiting here
// included.

// slotGate returns engine id's gate, made on first use.
func (p *Proxy) slotGate(id uint64) *admit.SlotGate {
	return p.gates.get(id, func() *admit.SlotGate { return admit.NewSlotGate(p.opts.MaxNumSeqs, p.opts.SlotBatch) })
}

// enterSlots waits, for a request routed to t under policy kvrouter,
// until its engine may take it. true: it goes, and endSlots(t) must be
// called when it ends; false with nil: no gate applies; an error: the
// client left while it waited (it never went).
func (p *Proxy) enterSlots(ctx context.Context, pol Policy, t target) (bool, error) {
	if pol != PolicyKV || t.peer || p.opts.SlotBatch <= 0 {
		return false, nil
	}
	if err := p.slotGate(t.WorkerID).Enter(ctx); err != nil {
		return false, err
	}
	return true, nil
}

// endSlots ends a request enterSlots let go.
func (p *Proxy) endSlots(t target) { p.slotGate(t.WorkerID).Ended() }

// slotsHeld is the requests waiting for engine id's slots (they count in
// its waiting requests, as its own queue does).
func (p *Proxy) slotsHeld(id uint64) int {
	if g := p.gates.find(id); g != nil {
		return g.Held()
	}
	return 0
}
