package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/kvhash/kvhash/router/kvmock"
)

// readyInfo is what --ready-file holds: where a kvmock started on port 0
// (or "*") actually listens, so a parent process (the demo, a test
// harness) can point a router at it without parsing logs.
type readyInfo struct {
	PID      int    `json:"pid"`
	HTTP     string `json:"http"`                // host:port
	KVEvents string `json:"kv_events,omitempty"` // tcp://host:port, when bound
	Replay   string `json:"replay,omitempty"`    // tcp://host:port, when configured
	Root     string `json:"root"`                // the root digest (hex): changes per start with --unstable
}

// writeReadyFile writes the file whole or not at all (a temp file renamed
// into place), so a reader polling for it never sees half of it.
func writeReadyFile(path string, httpAddr net.Addr, srv *kvmock.Server) error {
	info := readyInfo{PID: os.Getpid(), HTTP: httpAddr.String(), Root: srv.Root.String()}
	if p := srv.Publisher; p != nil {
		if a := p.EventsAddr(); a != nil {
			info.KVEvents = "tcp://" + a.String()
		}
		if a := p.ReplayAddr(); a != nil {
			info.Replay = "tcp://" + a.String()
		}
	}
	b, err := json.Marshal(info)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".kvmock-ready-*")
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rename: %w", err)
	}
	return nil
}
