package config

import "fmt"

// EPP serves kvrouter as a gateway's endpoint picker (router/epp;
// docs/guides/gateway.md): Envoy's ext_proc over gRPC. An empty Listen
// serves none.
type EPP struct {
	// Listen is the picker's gRPC address (conventionally port 9002).
	Listen string `yaml:"listen,omitempty"`
	// TLS serves it over TLS with a self-signed certificate (ALPN h2), as
	// gateways reach pickers without verifying them.
	TLS bool `yaml:"tls,omitempty"`
	// MaxInFlightPerWorker sheds a request (429) when every eligible
	// worker already has this many in flight through the picker; 0: the
	// proxy's backpressure instead (the same per-engine slots, shared).
	MaxInFlightPerWorker int `yaml:"max_in_flight_per_worker,omitempty"`
	// Fallbacks: endpoints after the pick in the answer, next cheapest
	// first (for gateways whose pool honours a list); 0: the pick alone.
	Fallbacks int `yaml:"fallbacks,omitempty"`
}

// validateEPP reports the picker's bad settings.
func (c *Config) validateEPP() []error {
	var errs []error
	if c.EPP.MaxInFlightPerWorker < 0 {
		errs = append(errs, fmt.Errorf("epp.max_in_flight_per_worker: %d; want >= 0", c.EPP.MaxInFlightPerWorker))
	}
	if c.EPP.Fallbacks < 0 || c.EPP.Fallbacks > 16 {
		errs = append(errs, fmt.Errorf("epp.fallbacks: %d; want 0..16", c.EPP.Fallbacks))
	}
	return errs
}
