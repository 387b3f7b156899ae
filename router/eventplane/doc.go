// Package eventplane runs kvrouter replicas on one shared event plane:
// NATS JetStream, embedded in the process or a real cluster.
//
// # Ingest once, apply everywhere
//
// Each engine's ZeroMQ stream is ingested by exactly one replica at a
// time: the one holding the engine's lease, a key in a JetStream
// key-value bucket whose TTL expires it when its holder stops renewing
// (lease.go). The holder runs router/ingest's Subscriber with a Handler
// that publishes every batch and stream event, normalized, to a
// JetStream stream, one subject per model, worker and rank
// (publish.go, wire.go, subject.go). JetStream's Nats-Msg-Id
// de-duplicates what a holder publishes twice.
//
// Every replica (the holder too) reads the whole stream in order with an
// ordered consumer and applies it to its own indexer through the same
// ingest.Handler methods (apply.go). Batches are de-duplicated per
// (worker, stream rank) by engine seq, so a leadership change whose
// replay republishes seqs applies nothing twice.
//
// Leases are spread over the live replicas by rendezvous hashing, and
// handed over to an engine's preferred replica when it joins (spread.go).
// A holder cut off from NATS stops ingesting every engine at once.
//
// A replica may apply only some models (Options.Models): partitions of
// the fleet divide its event rate (partition.go).
//
// # Shared settings, and a stream that starts over
//
// The stream and buckets are created if missing and never rewritten: the
// fleet's settings belong to whoever created them (store.go). A stream
// that was recreated or went back (NATS lost its store) is noticed on
// every readiness check: the replica drops its position, consumes the new
// stream from its start, and has every engine rebuilt from the engine
// (reset.go); it is not ready until it has.
//
// # Start and restart
//
// Replicas write index snapshots (router/snapshot's format) to a
// JetStream object store, with the stream sequence they cover in the
// object's metadata (snapshots.go); a starting replica restores the
// newest and consumes the stream from the sequence after it.
//
// # Load sync
//
// Route decisions, prefill-done and free go out on NATS core subjects
// with the replica's heartbeat (loadsync.go); every replica adds the
// others' requests to its router's load, and expires the requests of a
// replica whose heartbeat stopped. With each heartbeat goes a holdings
// message on a fleet subject of its own (fleet.go): the engines a replica
// registered (for the spread) and, for those it ingests, whether their
// streams are connected (connected.go: every replica reports the
// holder's view). Rebuild requests go there too (rebuild.go).
package eventplane
