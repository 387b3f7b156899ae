package serve

import (
	"fmt"

	"github.com/kvhash/kvhash/router/eventplane"
)

// newEventPlane makes this server one replica of a fleet sharing an event
// plane (config nats.url; router/eventplane): the plane is the ingest
// layer (the server ingests the engines whose lease it holds, and applies
// every engine's events from the stream), restores the newest snapshot
// into the (still empty) indexer, and syncs the router's load with the
// other replicas.
func (s *Server) newEventPlane() (*eventplane.Plane, error) {
	n := s.cfg.NATS
	p, err := eventplane.New(eventplane.Options{
		URL: n.URL, StoreDir: n.Store, ReplicaID: n.ReplicaID,
		MaxAge: n.StreamMaxAge, MaxBytes: n.StreamMaxBytes, SnapshotInterval: n.SnapshotInterval,
		LeaseTTL: n.LeaseTTL, ReplicaTimeout: n.ReplicaTimeout, Replicas: n.StreamReplicas, Models: n.Models,
		Logger: s.log,
	}, s.ix)
	if err != nil {
		return nil, fmt.Errorf("serve: event plane: %w", err)
	}
	p.AttachRouter(s.rt)
	s.log.Info("kvrouter: replica on the event plane", "replica_id", p.ReplicaID(), "nats", p.URL())
	return p, nil
}

// EventPlane is the server's event plane, nil when it runs alone.
func (s *Server) EventPlane() *eventplane.Plane {
	p, _ := s.ing.(*eventplane.Plane)
	return p
}

// eventPlaneReady adds the event plane's check to /readyz: not ready
// while cut off from NATS or catching up on the stream. why says which.
func (s *Server) eventPlaneReady(checks map[string]bool) (why string) {
	p := s.EventPlane()
	if p == nil {
		return ""
	}
	ok, why := p.Ready()
	checks["event_plane"] = ok
	return why
}
