package kvmock

import (
	"net/http"
	"sync/atomic"
)

// HealthSwitch is what GET /health reports. vLLM answers 200 with an empty
// body while its engine is alive; a router's health checks take an engine
// that fails them out of rotation. Flipping the switch (POST /kvmock/health
// {"healthy": false}, or SetHealthy) simulates a sick engine that still
// holds its cache and serves whatever it is sent, so a router's health
// handling can be tested without killing processes. The zero value is
// healthy.
type HealthSwitch struct {
	unhealthy atomic.Bool
}

// SetHealthy sets what /health reports.
func (h *HealthSwitch) SetHealthy(ok bool) { h.unhealthy.Store(!ok) }

// Healthy reports what /health reports.
func (h *HealthSwitch) Healthy() bool { return !h.unhealthy.Load() }

func (a *api) healthCheck(w http.ResponseWriter, _ *http.Request) {
	if !a.health.Healthy() {
		writeError(w, http.StatusServiceUnavailable, "engine marked unhealthy (POST /kvmock/health)")
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (a *api) setHealth(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		writeError(w, statusOf(err), err.Error())
		return
	}
	var req struct {
		Healthy *bool `json:"healthy"`
	}
	if err := decodeJSON(body, &req); err != nil {
		writeError(w, statusOf(err), err.Error())
		return
	}
	if req.Healthy == nil {
		writeError(w, http.StatusBadRequest, `want {"healthy": true|false}`)
		return
	}
	a.health.SetHealthy(*req.Healthy)
	a.log.Info("health switched", "healthy", *req.Healthy)
	writeJSON(w, map[string]bool{"healthy": *req.Healthy})
}
