// Package ingest is everything between an engine's ZeroMQ socket and a
// Handler call: kvrouter's intake of vLLM's and SGLang's KV event streams.
//
// # Wire
//
// A message is 3 frames: topic, seq (8 bytes, big-endian, from 0 per
// publisher), MessagePack payload. Decoder reads the payload in every
// shape engines send or have sent (see Decoder): batch as array or map,
// events as maps tagged "type" or as positional arrays, hashes as ints of
// either sign or bytes, unknown keys and extra tail elements ignored.
//
// # Streams
//
// Subscriber keeps one SUB socket per engine rank (rank r at port + r)
// and, optionally, one bound SUB endpoint that engines connect to, the
// Source then named by the topic (Resolver). Each Source has one goroutine
// that calls the Handler, so its calls never overlap and come in seq order.
//
// Per Source the seq is tracked: the first message sets it (or the resume
// seq of a restored snapshot, which first asks the engine to replay what
// came after it); a jump asks the engine's replay endpoint for the missing
// batches (StreamGapReplayed) or reports them lost (StreamGapLost: no
// replay endpoint, timeout, or the engine's buffer no longer reaches
// back); a seq below the last one received live is a new engine process
// (StreamRestarted). RequestReplay asks for batches again on demand.
//
// # Never fatal
//
// A message that is not 3 frames, not MessagePack or of the wrong shape is
// counted by reason (Stats) and reported (StreamMalformed); its batch is
// never half applied: a batch with one malformed event is dropped whole,
// and its seq reported lost (StreamGapLost), because leaving one event out
// would make the index silently wrong, while a lost batch makes the
// handler degrade the worker and rebuild it. Only events of an unknown
// kind are left out of an otherwise good batch (counted, reported): no
// kind the index knows is lost with them. Decoder and Handler panics are
// recovered and counted.
//
// # Queueing
//
// Each Source has a bounded queue (Options.QueueLen messages, of
// Options.QueueBytes at most, and of its share of Options.QueueBudget,
// the bound on all queues together) between the socket's reader and the
// Handler.
// A slow Handler fills it; the reader then waits
// (Stats.QueueWaits) rather than drop anything, which backs up into
// zmq4's small per-connection buffer and TCP, and finally into the
// engine's PUB socket, which drops at its high-water mark (vLLM's hwm,
// 100,000 messages by default). Such a drop is a seq gap, which the replay
// path fills or reports: nothing is lost silently. Replays run on the
// Source's goroutine; live messages wait in the queue meanwhile and those
// the replay already delivered are dropped by seq (Stats.Duplicates).
//
// Options.Workers can bound how many ingest goroutines work at once:
// sources decoding and calling the Handler (the others' batches wait
// their turn, Stats.WorkerWaits) and engine connections' readers between
// two reads, through one pool of tokens (router/internal/cpugate). With
// every P busy with runnable ingest goroutines, Go's scheduler notices a
// ready socket only when sysmon polls (about every 10 ms), and runs its
// goroutine behind them, so a query arriving during a burst waits; fewer
// workers than GOMAXPROCS leave a P for the collector and the queries, at
// the cost of some burst throughput. A receiver that waits for room in
// its stream's queue first has its socket's readers give back their
// tokens (cpugate.Link): the stream's goroutine may need one to make
// that room. Replay sockets are read ungated, as their receiver is the
// stream's goroutine, which takes a token for each batch itself.
//
// ingesttest builds realistic payloads for benchmarks; metrics.go exports
// Stats as Prometheus metrics (Collector).
package ingest
