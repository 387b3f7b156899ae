package proxy

import (
	"fmt"

	"github.com/kvhash/kvhash/router/indexer"
)

// Backpressure shared with another front end: kvrouter's endpoint picker
// (router/epp) sends requests to the same engines through a gateway, so
// they take the same per-engine slots (EngineSlots) as the proxy's own,
// and neither front end overfills an engine the other fills.

// SlotFree reports whether engine worker has a free slot now.
func (p *Proxy) SlotFree(worker uint64) bool { return p.slots.free(worker) }

// TakeSlot takes one of engine worker's slots; false when all are taken.
func (p *Proxy) TakeSlot(worker uint64) bool { return p.slots.take(worker) }

// GiveSlot returns a slot TakeSlot took, waking a request for model that
// waits in the admission queue.
func (p *Proxy) GiveSlot(worker uint64, model string) {
	p.slots.give(worker)
	p.adm.wakeOne(model)
}

// Saturated reports whether a new request for model would wait: every
// engine of the model the proxy can reach is at its slots, or requests
// for it already wait in the admission queue (they go first). A model
// with no reachable engine is not saturated (its requests get their own
// answer).
func (p *Proxy) Saturated(model string) bool {
	if p.adm.queued(model) {
		return true
	}
	cands, err := p.ix.Candidates(indexer.ModelKey{Model: model})
	if err != nil {
		return false
	}
	reachable := false
	for _, c := range cands {
		if p.baseURL(c.Worker.ID) == "" {
			continue
		}
		if p.slots.free(c.Worker.ID) {
			return false
		}
		reachable = true
	}
	return reachable
}

// Admit is Saturated as another front end's admission check: an error
// wrapping ErrSaturated when a new request for model would wait.
func (p *Proxy) Admit(model string) error {
	if p.Saturated(model) {
		return fmt.Errorf("%w: model %q: every engine is at its limit (max_num_seqs + engine_queue, shared with kvrouter's proxy), or requests for it wait in the proxy's queue", ErrSaturated, model)
	}
	return nil
}
