// Package snapshot writes kvrouter's state (indexer.Saved: the registry,
// each index, the salt map, each rank's last seq) to one file, atomically,
// and reads it back, so a router restart is not a cold start.
//
// The file is a binary form of its own (format.go): a magic header, a
// format version, the block size, the payload, and a SHA-256 of all that.
// A file that is truncated, corrupt, of another format or version, or
// written at another block size is an error value (ErrCorrupt, ErrForeign):
// kvrouter refuses to start on it unless told to set it aside.
package snapshot

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kvhash/kvhash/router/indexer"
)

// Errors of Read and Decode, wrapped with details.
var (
	// ErrCorrupt: the file is truncated or damaged (bad checksum, bad
	// payload).
	ErrCorrupt = errors.New("snapshot corrupt")
	// ErrForeign: not a kvrouter snapshot, a version this build cannot
	// read, or written at another block size.
	ErrForeign = errors.New("snapshot foreign")
)

// Write saves s to path atomically: a temporary file in the same
// directory, fsynced, renamed over path, and the directory fsynced.
func Write(path string, s indexer.Saved) error {
	data, err := Encode(s)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("snapshot: write %s: %w", path, err)
	}
	done := false
	defer func() {
		if !done {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("snapshot: write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("snapshot: fsync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("snapshot: close %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("snapshot: rename to %s: %w", path, err)
	}
	done = true
	// The rename is durable once the directory is synced.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// Read loads a snapshot written at blockSize.
func Read(path string, blockSize int) (indexer.Saved, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return indexer.Saved{}, fmt.Errorf("snapshot: read: %w", err)
	}
	s, err := Decode(data, blockSize)
	if err != nil {
		return indexer.Saved{}, fmt.Errorf("snapshot: %s: %w", path, err)
	}
	return s, nil
}

// Save exports an Indexer's state and writes it to path.
func Save(path string, ix *indexer.Indexer) error {
	return Write(path, ix.Export())
}

// Load reads path and restores it into an empty Indexer. On any error the
// Indexer is left empty and the error says why (os.ErrNotExist when there
// is no snapshot yet).
func Load(path string, ix *indexer.Indexer) error {
	s, err := Read(path, ix.BlockSize())
	if err != nil {
		return err
	}
	if err := ix.Restore(s); err != nil {
		return fmt.Errorf("snapshot: %s: %w", path, err)
	}
	return nil
}
