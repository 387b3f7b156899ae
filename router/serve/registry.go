package serve

import (
	"fmt"
	"maps"

	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/ingest"
)

// addWorker registers a worker (kvrouter's API, the config) and
// subscribes to each of its ranks: rank r at the endpoint's port + r (the
// replay endpoint likewise). A known worker is updated: its old
// subscription stops first. It reports whether the worker is new.
func (s *Server) addWorker(spec indexer.WorkerSpec) (bool, error) {
	if err := s.checkLabels(label{"model", spec.Model}, label{"tenant", spec.Tenant}, label{"topic", spec.Topic}); err != nil {
		return false, err
	}
	if err := validateSpec(spec); err != nil {
		return false, err
	}
	var err error
	if spec.BaseURL, err = s.checkBaseURL(spec.BaseURL); err != nil {
		return false, err
	}
	if err := s.checkEndpointHosts(spec.Endpoint, spec.ReplayEndpoint); err != nil {
		return false, err
	}
	spec.DPSize = max(spec.DPSize, 1)
	streams, err := rankStreams(spec, nil)
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.registerLocked(spec, streams)
}

// rankStreams lists where each rank of spec publishes; only gives the
// ranks to show (nil: all).
func rankStreams(spec indexer.WorkerSpec, only map[uint32]bool) (map[uint32]rankStream, error) {
	streams := map[uint32]rankStream{}
	if spec.Endpoint == "" {
		return streams, nil
	}
	for r := range uint32(max(spec.DPSize, 1)) {
		if only != nil && !only[r] {
			continue
		}
		ep, err := ingest.RankEndpoint(spec.Endpoint, r)
		if err != nil {
			return nil, badRequest("invalid_endpoint", "%v", err)
		}
		rep, err := ingest.RankEndpoint(spec.ReplayEndpoint, r)
		if err != nil {
			return nil, badRequest("invalid_endpoint", "%v", err)
		}
		streams[r] = rankStream{Endpoint: ep, Replay: rep}
	}
	return streams, nil
}

// registerLocked puts spec into the indexer and (re)subscribes its ranks.
func (s *Server) registerLocked(spec indexer.WorkerSpec, streams map[uint32]rankStream) (bool, error) {
	if old, ok := s.ix.Worker(spec.WorkerID); ok {
		s.unsubscribeLocked(old.Spec)
		if old.Spec.Model != spec.Model || indexer.CanonicalTenant(old.Spec.Tenant) != indexer.CanonicalTenant(spec.Tenant) {
			var blocks uint64
			for _, r := range old.Ranks {
				blocks += r.Blocks
			}
			// A move the operator may not have meant: say what it costs.
			s.log.Warn("kvrouter: a worker re-registered under another model or tenant; its blocks in the old index are dropped",
				"worker_id", spec.WorkerID, "old_model", old.Spec.Model, "old_tenant", old.Spec.Tenant,
				"model", spec.Model, "tenant", spec.Tenant, "blocks_dropped", blocks)
		}
	}
	isNew, err := s.ix.AddWorker(spec)
	if err != nil {
		return false, badRequest("invalid_worker", "%v", err)
	}
	s.endpoints[spec.WorkerID] = streams
	return isNew, s.subscribeLocked(spec)
}

// subscribeLocked starts the worker's subscription, each rank resuming
// after the last seq the indexer holds (a restored snapshot, or the
// stream before a re-registration), so replay fills what came meanwhile.
func (s *Server) subscribeLocked(spec indexer.WorkerSpec) error {
	if s.ing == nil || spec.Endpoint == "" {
		return nil
	}
	sub := ingest.Subscription{
		Model: spec.Model, WorkerID: spec.WorkerID, Endpoint: spec.Endpoint,
		ReplayEndpoint: spec.ReplayEndpoint, DPSize: max(spec.DPSize, 1), Topic: spec.Topic,
	}
	if info, ok := s.ix.Worker(spec.WorkerID); ok {
		for _, ri := range info.Ranks {
			if ri.HaveSeq {
				if sub.ResumeAfter == nil {
					sub.ResumeAfter = map[uint32]uint64{}
				}
				sub.ResumeAfter[ri.Worker.DPRank] = ri.LastSeq
			}
		}
	}
	if _, err := s.ing.Subscribe(sub); err != nil {
		return internalError(fmt.Errorf("worker %d: subscribe to %s: %w", spec.WorkerID, spec.Endpoint, err))
	}
	s.log.Info("kvrouter: subscribed", "worker_id", spec.WorkerID, "model", spec.Model, "endpoint", spec.Endpoint,
		"replay_endpoint", spec.ReplayEndpoint, "dp_size", sub.DPSize, "topic", spec.Topic, "resume_after", sub.ResumeAfter)
	return nil
}

func (s *Server) unsubscribeLocked(spec indexer.WorkerSpec) {
	if s.ing != nil && spec.Endpoint != "" {
		s.ing.Unsubscribe(spec.Model, spec.WorkerID)
	}
	delete(s.endpoints, spec.WorkerID)
}

// removeWorker unsubscribes a worker and drops it and its blocks.
func (s *Server) removeWorker(id uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	info, ok := s.ix.Worker(id)
	if !ok {
		return false
	}
	s.unsubscribeLocked(info.Spec)
	return s.ix.RemoveWorker(id)
}

// streamsOf returns a worker's rank endpoints (a copy).
func (s *Server) streamsOf(id uint64) map[uint32]rankStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.endpoints[id])
}

func validateSpec(spec indexer.WorkerSpec) error {
	if spec.Model == "" {
		return badRequest("missing_field", "missing required field model")
	}
	if spec.DPSize < 0 || spec.DPSize > 1024 {
		return badRequest("invalid_value", "field dp_size: %d; want 1..1024", spec.DPSize)
	}
	if err := checkEndpoint("endpoint", spec.Endpoint); err != nil {
		return badRequest("invalid_endpoint", "%v", err)
	}
	if err := checkEndpoint("replay_endpoint", spec.ReplayEndpoint); err != nil {
		return badRequest("invalid_endpoint", "%v", err)
	}
	if spec.ReplayEndpoint != "" && spec.Endpoint == "" {
		return badRequest("invalid_endpoint", "replay_endpoint needs an endpoint")
	}
	return nil
}
