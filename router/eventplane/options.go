package eventplane

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"
)

// Options configure a replica's Plane. Zero values take the defaults.
type Options struct {
	// URL is "embedded" (an in-process server, see StoreDir) or a NATS
	// URL (nats://host:4222, comma-separated for a cluster).
	URL string
	// StoreDir is the embedded server's JetStream directory; "" makes a
	// temporary one, removed at Close.
	StoreDir string
	// ReplicaID names this replica (lease values, load sync, snapshot
	// names); "": hostname-pid.
	ReplicaID string
	// Prefix starts every subject, bucket and stream name (default
	// "kvrouter"): several fleets may share one NATS.
	Prefix string
	// Models, when set, makes the replica one of a partition: it applies
	// and ingests only these models' engines (partition.go).
	Models []string

	// MaxAge and MaxBytes bound the event stream's retention (defaults
	// 24 h and 1 GiB). A replica restarts from the newest snapshot and the
	// stream after it: SnapshotInterval must stay well below MaxAge (and
	// the stream must hold more than one interval's events).
	MaxAge   time.Duration
	MaxBytes int64
	// DuplicateWindow is JetStream's Nats-Msg-Id window (default 2 min).
	DuplicateWindow time.Duration
	// Replicas is the stream's and buckets' replication factor in a
	// clustered NATS (default 1).
	Replicas int

	// SnapshotInterval: how often the index goes to the object store
	// (default 1 min; negative: never, tests).
	SnapshotInterval time.Duration
	// LeaseTTL: an engine's lease expires this long after its holder's
	// last renewal, and another replica takes the engine over (default
	// 5 s; renewed every third of it).
	LeaseTTL time.Duration
	// HeartbeatInterval and ReplicaTimeout: replicas announce themselves
	// every interval; one silent for the timeout has its requests expired
	// by the others (defaults 1 s and 5 s).
	HeartbeatInterval, ReplicaTimeout time.Duration

	Logger *slog.Logger
}

func (o *Options) setDefaults() error {
	if o.URL == "" {
		return errors.New("eventplane: no NATS URL (\"embedded\" or nats://host:4222)")
	}
	if o.ReplicaID == "" {
		host, _ := os.Hostname()
		o.ReplicaID = SubjectToken(host) + "-" + strconv.Itoa(os.Getpid())
	}
	if t := SubjectToken(o.ReplicaID); t != o.ReplicaID {
		return fmt.Errorf("eventplane: replica id %q: use letters, digits, '-' and '_' only (e.g. %q)", o.ReplicaID, t)
	}
	for _, m := range o.Models {
		if m == "" {
			return errors.New("eventplane: an empty model name in the partition's models")
		}
	}
	if o.Prefix == "" {
		o.Prefix = "kvrouter"
	}
	if t := SubjectToken(o.Prefix); t != o.Prefix {
		return fmt.Errorf("eventplane: prefix %q: use letters, digits, '-' and '_' only", o.Prefix)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.MaxAge, 24*time.Hour)
	def(&o.DuplicateWindow, 2*time.Minute)
	def(&o.SnapshotInterval, time.Minute)
	def(&o.LeaseTTL, 5*time.Second)
	def(&o.HeartbeatInterval, time.Second)
	def(&o.ReplicaTimeout, 5*time.Second)
	if o.MaxBytes == 0 {
		o.MaxBytes = 1 << 30
	}
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.DuplicateWindow > o.MaxAge {
		o.DuplicateWindow = o.MaxAge
	}
	if o.SnapshotInterval > 0 && o.SnapshotInterval*2 > o.MaxAge {
		return fmt.Errorf("eventplane: snapshot interval %v must be well below the stream's max age %v (a restarting replica needs the stream after its snapshot)", o.SnapshotInterval, o.MaxAge)
	}
	if o.LeaseTTL < 300*time.Millisecond {
		return fmt.Errorf("eventplane: lease ttl %v: want at least 300ms", o.LeaseTTL)
	}
	return nil
}

func (o *Options) streamName() string   { return o.Prefix + "_events" }
func (o *Options) leaseBucket() string  { return o.Prefix + "_leases" }
func (o *Options) snapBucket() string   { return o.Prefix + "_snapshots" }
func (o *Options) eventsFilter() string { return o.Prefix + ".events.>" }
func (o *Options) loadSubject(replica string) string {
	return o.Prefix + ".load." + replica
}
