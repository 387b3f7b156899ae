# The event plane: router replicas on NATS JetStream (router/eventplane).
# Its tests (in-process NATS servers, three replicas, takeover, restart,
# cut-off, load sync) run with every Go package's (go-test in mk/10-go.mk).

BENCH_TARGETS += bench-eventplane

.PHONY: bench-eventplane fuzz-eventplane
# Engine batches through the stream into three replicas on this machine:
# events/s unpaced, and the lag from the engine's send to the last
# replica's index (p50/p99) at a paced 500 batches/s.
# Then one replica's apply rate against the indexer's own on the same
# batches (plane/indexer: 1 = free; the goal is at least 0.5), without
# NATS (decode) and from a filled stream (stream).
bench-eventplane:
	$(GO) test -run '^$$' -bench '^BenchmarkEventPlane$$' -benchtime 4000x -count=1 ./router/eventplane
	$(GO) test -run '^$$' -bench '^BenchmarkApplyRate$$' -benchtime 3x -count=1 ./router/eventplane

# The decoders of what arrives from NATS, briefly.
fuzz-eventplane:
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime 10s ./router/eventplane
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeLoad$$' -fuzztime 10s ./router/eventplane
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeFleet$$' -fuzztime 10s ./router/eventplane
	$(GO) test -run '^$$' -fuzz '^FuzzLengths$$' -fuzztime 10s ./router/internal/msgpackcheck
	$(GO) test -run '^$$' -fuzz '^FuzzLengthsOfEncoded$$' -fuzztime 10s ./router/internal/msgpackcheck
