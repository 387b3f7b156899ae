package serve

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/kvhash/kvhash/router/snapshot"
)

// loadSnapshot restores the index from the snapshot file, if any. A
// missing file is a first start; a corrupt or foreign one is logged
// clearly and the router starts empty (the file is left for inspection
// and overwritten by the next write).
func (s *Server) loadSnapshot() {
	defer s.ready.snapshot.Store(true)
	path := s.cfg.Snapshot.Path
	if path == "" {
		if s.EventPlane() != nil {
			// The plane restored the fleet's newest snapshot into the index
			// (New): its workers are this replica's too, leases and all.
			s.resubscribeRestored()
		}
		return
	}
	start := time.Now()
	err := snapshot.Load(path, s.ix)
	switch {
	case err == nil:
		s.resubscribeRestored()
		var blocks uint64
		for _, sz := range s.ix.Sizes() {
			blocks += sz.Pairs
		}
		s.log.Info("kvrouter: snapshot loaded; subscriptions resume from each engine's saved seq",
			"path", path, "workers", len(s.ix.Workers()), "blocks", blocks, "took", time.Since(start).String())
	case errors.Is(err, fs.ErrNotExist):
		s.log.Info("kvrouter: no snapshot yet; starting empty", "path", path)
	default:
		s.log.Error("kvrouter: snapshot unusable; starting with an empty index (it is overwritten at the next write)",
			"path", path, "error", err, "corrupt", errors.Is(err, snapshot.ErrCorrupt), "foreign", errors.Is(err, snapshot.ErrForeign))
	}
}

// resubscribeRestored makes the restored index's workers live: their
// endpoints known and their engines subscribed (on the event plane: their
// leases contended for), each rank resuming after its restored seq.
func (s *Server) resubscribeRestored() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, info := range s.ix.Workers() {
		streams, err := rankStreams(info.Spec, nil)
		if err != nil {
			s.log.Error("kvrouter: a restored worker's endpoint is unusable", "worker_id", info.Spec.WorkerID, "error", err)
			continue
		}
		s.endpoints[info.Spec.WorkerID] = streams
		if err := s.subscribeLocked(info.Spec); err != nil {
			s.log.Error("kvrouter: resubscribing a restored worker failed", "worker_id", info.Spec.WorkerID, "error", err)
		}
	}
}

// writeSnapshot saves the index atomically, if a path is configured.
func (s *Server) writeSnapshot() error {
	path := s.cfg.Snapshot.Path
	if path == "" {
		return nil
	}
	start := time.Now()
	if err := snapshot.Save(path, s.ix); err != nil {
		s.m.snapshots.WithLabelValues("error").Inc()
		s.log.Error("kvrouter: snapshot write failed", "path", path, "error", err)
		return fmt.Errorf("serve: %w", err)
	}
	s.m.snapshots.WithLabelValues("ok").Inc()
	s.log.Debug("kvrouter: snapshot written", "path", path, "took", time.Since(start).String())
	return nil
}

func (s *Server) snapshotLoop() {
	defer s.loops.Done()
	t := time.NewTicker(s.cfg.Snapshot.Interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			_ = s.writeSnapshot() // logged and counted
		}
	}
}
