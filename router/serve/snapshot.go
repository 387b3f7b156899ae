package serve

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/kvhash/kvhash/router/snapshot"
)

// ErrStart: the config cannot be served as it is (a worker of the config
// cannot be registered, the snapshot cannot be read or written). Start's
// errors wrap it; kvrouter exits 2 on them.
var ErrStart = errors.New("cannot start")

// loadSnapshot restores the index from the snapshot file, if any. A
// missing file is a first start. A file that cannot be read, is corrupt,
// or is foreign (another format, another block size) is an error: the
// registry in it is not thrown away by a start that did not read it. With
// snapshot.discard_unreadable the file is set aside (renamed, never
// overwritten) and the router starts empty. The snapshot's directory
// must be writable either way, or the shutdown's write would fail.
func (s *Server) loadSnapshot() error {
	defer s.ready.snapshot.Store(true)
	path := s.cfg.Snapshot.Path
	if path == "" {
		if s.EventPlane() != nil {
			// The plane restored the fleet's newest snapshot into the index
			// (New): its workers are this replica's too, leases and all.
			s.resubscribeRestored()
		}
		return nil
	}
	if err := checkWritable(filepath.Dir(path)); err != nil {
		return fmt.Errorf("serve: %w: snapshot %s cannot be written: %w", ErrStart, path, err)
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
	case !s.cfg.Snapshot.DiscardUnreadable:
		return fmt.Errorf("serve: %w: snapshot %s unusable (%w); kvrouter would lose its registry by starting without it: "+
			"fix it (the right --block-size?), move it, or start with --snapshot-discard-unreadable to set it aside and start empty", ErrStart, path, err)
	default:
		aside := fmt.Sprintf("%s.unreadable-%s", path, time.Now().UTC().Format("20060102T150405.000Z"))
		if rerr := os.Rename(path, aside); rerr != nil {
			return fmt.Errorf("serve: %w: snapshot %s unusable (%w) and could not be set aside: %w", ErrStart, path, err, rerr)
		}
		s.log.Warn("kvrouter: snapshot unusable; set aside, starting with an empty index",
			"path", path, "kept_as", aside, "error", err, "corrupt", errors.Is(err, snapshot.ErrCorrupt), "foreign", errors.Is(err, snapshot.ErrForeign))
	}
	return nil
}

// checkWritable reports whether a file can be created in dir (the
// snapshot's atomic write creates one there).
func checkWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".kvrouter-write-check-*")
	if err != nil {
		return err
	}
	name := f.Name()
	return errors.Join(f.Close(), os.Remove(name))
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
