package eventplane

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The stream and the two buckets are shared by the fleet. Their settings
// (retention, lease TTL, replication) have one owner: whoever creates
// them. A replica finding them already there uses them as they are, and
// logs where its own flags disagree, rather than rewriting the fleet's
// settings (a replica started with another lease TTL would otherwise
// shorten every holder's leases, and take them).

func (p *Plane) streamConfig() jetstream.StreamConfig {
	o := p.opts
	return jetstream.StreamConfig{
		Name:        o.streamName(),
		Description: "kvrouter: engines' KV events, normalized, one subject per model, worker and rank",
		Subjects:    []string{o.eventsFilter()},
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		MaxAge:      o.MaxAge,
		MaxBytes:    o.MaxBytes,
		Duplicates:  o.DuplicateWindow,
		Storage:     jetstream.FileStorage,
		Replicas:    o.Replicas,
	}
}

func (p *Plane) leaseConfig() jetstream.KeyValueConfig {
	o := p.opts
	return jetstream.KeyValueConfig{
		Bucket: o.leaseBucket(), Description: "kvrouter: which replica ingests which engine",
		TTL: o.LeaseTTL, History: 1, Storage: jetstream.FileStorage, Replicas: o.Replicas,
	}
}

func (p *Plane) snapConfig() jetstream.ObjectStoreConfig {
	o := p.opts
	return jetstream.ObjectStoreConfig{
		Bucket: o.snapBucket(), Description: "kvrouter: index snapshots with the stream sequence they cover",
		Storage: jetstream.FileStorage, Replicas: o.Replicas,
	}
}

// ensureStore makes whichever of the stream and buckets is missing (a
// first start, or a NATS server that lost its JetStream store), and
// reports what it created. It never changes one that exists.
func (p *Plane) ensureStore(ctx context.Context) (created []string, err error) {
	stream, made, err := ensureOne(ctx,
		func(ctx context.Context) (jetstream.Stream, error) { return p.js.Stream(ctx, p.opts.streamName()) },
		func(ctx context.Context) (jetstream.Stream, error) { return p.js.CreateStream(ctx, p.streamConfig()) },
		jetstream.ErrStreamNotFound)
	if err != nil {
		return created, fmt.Errorf("eventplane: stream %s: %w", p.opts.streamName(), err)
	}
	if made {
		created = append(created, p.opts.streamName())
	}
	kv, made, err := ensureOne(ctx,
		func(ctx context.Context) (jetstream.KeyValue, error) { return p.js.KeyValue(ctx, p.opts.leaseBucket()) },
		func(ctx context.Context) (jetstream.KeyValue, error) {
			return p.js.CreateKeyValue(ctx, p.leaseConfig())
		},
		jetstream.ErrBucketNotFound)
	if err != nil {
		return created, fmt.Errorf("eventplane: lease bucket %s: %w", p.opts.leaseBucket(), err)
	}
	if made {
		created = append(created, p.opts.leaseBucket())
	}
	obj, made, err := ensureOne(ctx,
		func(ctx context.Context) (jetstream.ObjectStore, error) {
			return p.js.ObjectStore(ctx, p.opts.snapBucket())
		},
		func(ctx context.Context) (jetstream.ObjectStore, error) {
			return p.js.CreateObjectStore(ctx, p.snapConfig())
		},
		jetstream.ErrBucketNotFound)
	if err != nil {
		return created, fmt.Errorf("eventplane: snapshot bucket %s: %w", p.opts.snapBucket(), err)
	}
	if made {
		created = append(created, p.opts.snapBucket())
	}
	if p.stream == nil { // the first call (connect): later calls keep the handles, which name the same things
		p.stream, p.kv, p.obj = stream, kv, obj
	}
	return created, nil
}

// ensureOne gets a JetStream asset, creating it when it is missing; a
// replica that races another to create it gets the other's.
func ensureOne[T any](ctx context.Context, get, create func(context.Context) (T, error), notFound error) (T, bool, error) {
	v, err := get(ctx)
	if err == nil || !errors.Is(err, notFound) {
		return v, false, err
	}
	v, err = create(ctx)
	if err == nil {
		return v, true, nil
	}
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) || errors.Is(err, jetstream.ErrBucketExists) {
		v, err = get(ctx)
	}
	return v, false, err
}

// adoptSharedSettings reads the fleet's settings from the stream and the
// lease bucket, logs the flags of this replica that disagree, and uses
// the shared values (the lease TTL drives the renewal period).
func (p *Plane) adoptSharedSettings(ctx context.Context) error {
	info, err := p.stream.Info(ctx)
	if err != nil {
		return fmt.Errorf("eventplane: stream info: %w", err)
	}
	c := info.Config
	p.disagree("stream_max_age", p.opts.MaxAge, c.MaxAge)
	p.disagree("stream_max_bytes", p.opts.MaxBytes, c.MaxBytes)
	p.disagree("stream_replicas", p.opts.Replicas, c.Replicas)
	p.opts.MaxAge, p.opts.MaxBytes, p.opts.Replicas = c.MaxAge, c.MaxBytes, c.Replicas
	st, err := p.kv.Status(ctx)
	if err != nil {
		return fmt.Errorf("eventplane: lease bucket status: %w", err)
	}
	if ttl := st.TTL(); ttl > 0 {
		p.disagree("lease_ttl", p.opts.LeaseTTL, ttl)
		p.opts.LeaseTTL = ttl
	}
	return nil
}

func (p *Plane) disagree(setting string, mine, shared any) {
	if fmt.Sprint(mine) == fmt.Sprint(shared) {
		return
	}
	if d, ok := shared.(time.Duration); ok {
		shared = d.String()
		mine = mine.(time.Duration).String()
	}
	p.log.Warn("kvrouter: this replica's setting differs from the fleet's shared one; using the shared value "+
		"(the first replica to create the event plane owns it; change it with the NATS CLI)",
		"setting", setting, "flag", mine, "shared", shared)
}
