package eventplane

import "sync/atomic"

// Stats are a replica's event-plane counters.
type Stats struct {
	Applied        atomic.Uint64 // stream messages applied to the local indexer
	Duplicates     atomic.Uint64 // batches and gaps skipped: their engine seq was applied already
	Malformed      atomic.Uint64 // stream messages that did not decode (skipped)
	HandlerPanics  atomic.Uint64 // indexer panics recovered while applying
	Published      atomic.Uint64 // messages this replica published (as an engine's holder)
	PublishRetries atomic.Uint64 // publishes retried (NATS unreachable, timeouts)
	Dropped        atomic.Uint64 // publishes abandoned because the lease moved (the new holder replays them)
	LeasesTaken    atomic.Uint64 // engine leases acquired
	LeasesLost     atomic.Uint64 // engine leases lost (taken over, or not renewed in time)
	Snapshots      atomic.Uint64 // snapshots written to the object store
	SnapshotErrors atomic.Uint64
	RemoteRouted   atomic.Uint64 // other replicas' requests added to the load
	RemoteExpired  atomic.Uint64 // requests expired because their replica vanished
	Oversized      atomic.Uint64 // batches over NATS's max_payload, published as lost gaps
	LoadDropped    atomic.Uint64 // own load changes not sent: the send queue was full
	HandedOver     atomic.Uint64 // leases released to the engine's preferred replica (spread.go)
	Resyncs        atomic.Uint64 // stream positions dropped: the stream was recreated or went back (reset.go)
}
