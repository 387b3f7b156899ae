package config

import (
	"fmt"
	"strings"
	"time"
)

// NATS configures the event plane shared by router replicas
// (router/eventplane; docs/guides/scale-out.md). An empty URL runs the
// router alone, as without it.
type NATS struct {
	// URL: "" (alone), "embedded" (an in-process NATS server with
	// JetStream) or nats://host:4222 (a cluster; comma-separated URLs).
	URL string `yaml:"url,omitempty"`
	// Store is the embedded server's JetStream directory ("" = a
	// temporary one).
	Store string `yaml:"store,omitempty"`
	// ReplicaID names this replica ("" = hostname-pid).
	ReplicaID string `yaml:"replica_id,omitempty"`
	// StreamMaxAge and StreamMaxBytes bound the event stream's retention
	// (0: 24h and 1 GiB). SnapshotInterval (0: 1m) must stay well below
	// StreamMaxAge: a restarting replica needs the stream after its
	// snapshot.
	StreamMaxAge     time.Duration `yaml:"stream_max_age,omitempty"`
	StreamMaxBytes   int64         `yaml:"stream_max_bytes,omitempty"`
	SnapshotInterval time.Duration `yaml:"snapshot_interval,omitempty"`
	// LeaseTTL: how long an engine waits for a new ingesting replica when
	// its holder dies (0: 5s). ReplicaTimeout: how long a silent replica's
	// requests still count as load on the others (0: 5s).
	LeaseTTL       time.Duration `yaml:"lease_ttl,omitempty"`
	ReplicaTimeout time.Duration `yaml:"replica_timeout,omitempty"`
	// StreamReplicas is the JetStream replication factor of the stream and
	// buckets in a clustered NATS (0: 1; 3 survives one server's loss).
	StreamReplicas int `yaml:"stream_replicas,omitempty"`
	// Models, when set, makes this replica one of a partition: it applies
	// and ingests only these models' engines (empty: every model).
	Models []string `yaml:"models,omitempty"`
}

// validateNATS reports the event plane's bad settings.
func (c *Config) validateNATS() []error {
	n := c.NATS
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if n.URL == "" {
		if n.Store != "" || n.ReplicaID != "" {
			bad("nats: store and replica_id need nats.url (--nats embedded or nats://host:4222)")
		}
		if len(n.Models) > 0 {
			bad("nats.models needs nats.url (--nats embedded or nats://host:4222)")
		}
		return errs
	}
	if n.URL != "embedded" && !strings.Contains(n.URL, "://") {
		bad("nats.url: %q; want embedded or nats://host:4222", n.URL)
	}
	if n.Store != "" && n.URL != "embedded" {
		bad("nats.store: only the embedded server keeps a store")
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"stream_max_age", n.StreamMaxAge}, {"snapshot_interval", n.SnapshotInterval}, {"lease_ttl", n.LeaseTTL}, {"replica_timeout", n.ReplicaTimeout}} {
		if d.v < 0 {
			bad("nats.%s: %v is negative", d.key, d.v)
		}
	}
	if n.StreamReplicas < 0 || n.StreamReplicas > 5 {
		bad("nats.stream_replicas: %d; want 1..5 (JetStream's limit)", n.StreamReplicas)
	}
	if n.StreamMaxBytes < 0 {
		bad("nats.stream_max_bytes: %d is negative", n.StreamMaxBytes)
	}
	if c.Snapshot.Path != "" {
		bad("snapshot.path with nats.url: replicas keep their snapshots in the event plane's object store; drop --snapshot")
	}
	if c.Bind != "" {
		bad("bind with nats.url: a bound endpoint is not shared between replicas yet; subscribe to the engines instead")
	}
	return errs
}
