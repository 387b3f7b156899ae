package config

import (
	"flag"
	"fmt"
	"time"

	"github.com/kvhash/kvhash/router/route/admit"
)

// Proxy configures the OpenAI proxy's backpressure (router/proxy,
// admission.go): how many requests an engine takes from the proxy at
// once, and how requests wait when every engine of their model is full.
type Proxy struct {
	// MaxNumSeqs: the requests an engine runs at once (vLLM's
	// --max-num-seqs).
	MaxNumSeqs int `yaml:"max_num_seqs"`
	// EngineQueue: the requests an engine may hold beyond those, waiting
	// in its own queue. An engine takes MaxNumSeqs + EngineQueue requests
	// from the proxy at most; a connection pool of that size.
	EngineQueue int `yaml:"engine_queue"`
	// AdmissionQueue: requests that may wait in the proxy for an
	// engine's slot; past it, 429 at once.
	AdmissionQueue int `yaml:"admission_queue"`
	// AdmissionTimeout: how long one waits before its 429.
	AdmissionTimeout time.Duration `yaml:"admission_timeout"`
	// HoldTokens: under policy kvrouter, requests wait in the proxy
	// before routing while every engine has this much prefill queued, and
	// go by highest response ratio (router/route/admit); 0: never held.
	HoldTokens int `yaml:"hold_tokens"`
	// SlotBatch: under policy kvrouter, once an engine runs MaxNumSeqs
	// requests, the next ones routed to it wait in the proxy until this
	// many of its slots are free and go together (router/route/admit's
	// Slots); 0: they go at once.
	SlotBatch int `yaml:"slot_batch"`
}

// Defaults of the proxy's backpressure (vLLM's default max_num_seqs).
const (
	DefaultMaxNumSeqs       = 256
	DefaultEngineQueue      = 256
	DefaultAdmissionQueue   = 1024
	DefaultAdmissionTimeout = 5 * time.Second
	DefaultHoldTokens       = admit.DefaultHoldTokens
	DefaultSlotBatch        = admit.DefaultSlotBatch
)

func defaultProxy() Proxy {
	return Proxy{MaxNumSeqs: DefaultMaxNumSeqs, EngineQueue: DefaultEngineQueue,
		AdmissionQueue: DefaultAdmissionQueue, AdmissionTimeout: DefaultAdmissionTimeout, HoldTokens: DefaultHoldTokens,
		SlotBatch: DefaultSlotBatch}
}

// validateProxy reports the proxy's bad settings.
func (c *Config) validateProxy() []error {
	var errs []error
	p := c.Proxy
	if p.MaxNumSeqs < 1 {
		errs = append(errs, fmt.Errorf("proxy.max_num_seqs: %d; want >= 1", p.MaxNumSeqs))
	}
	if p.EngineQueue < 0 {
		errs = append(errs, fmt.Errorf("proxy.engine_queue: %d; want >= 0", p.EngineQueue))
	}
	if p.AdmissionQueue < 1 {
		errs = append(errs, fmt.Errorf("proxy.admission_queue: %d; want >= 1", p.AdmissionQueue))
	}
	if p.HoldTokens < 0 {
		errs = append(errs, fmt.Errorf("proxy.hold_tokens: %d; want >= 0 (0: never held)", p.HoldTokens))
	}
	if p.SlotBatch < 0 {
		errs = append(errs, fmt.Errorf("proxy.slot_batch: %d; want >= 0 (0: no batching)", p.SlotBatch))
	}
	if p.AdmissionTimeout <= 0 {
		errs = append(errs, fmt.Errorf("proxy.admission_timeout: %v; want > 0", p.AdmissionTimeout))
	}
	return errs
}

// proxyFlags binds the proxy's keys to their flags.
func proxyFlags(fs *flag.FlagSet, p *Proxy) {
	fs.IntVar(&p.MaxNumSeqs, "max-num-seqs", p.MaxNumSeqs, "requests an engine runs at once (its --max-num-seqs): with --engine-queue, what the proxy sends it at most")
	fs.IntVar(&p.EngineQueue, "engine-queue", p.EngineQueue, "requests the proxy may send an engine beyond --max-num-seqs (they wait in the engine's queue)")
	fs.IntVar(&p.AdmissionQueue, "admission-queue", p.AdmissionQueue, "requests that may wait in the proxy when every engine of their model is full (429 beyond)")
	fs.DurationVar(&p.AdmissionTimeout, "admission-timeout", p.AdmissionTimeout, "how long a request waits for an engine's slot before its 429")
	fs.IntVar(&p.HoldTokens, "hold-tokens", p.HoldTokens, "policy kvrouter: hold requests in the proxy while every engine has this much prefill queued, and route them by highest response ratio (0: never hold)")
	fs.IntVar(&p.SlotBatch, "slot-batch", p.SlotBatch, "policy kvrouter: once an engine runs --max-num-seqs requests, hold the next ones routed to it until this many of its slots are free, and send them together (0: send at once)")
}
