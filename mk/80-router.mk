# kvrouter, the service (router/serve, router/config, cmd/kvrouter): the
# binary, and its figures. Its Go tests (router/serve, router/config and
# the end-to-end router/tests, which start the Python test engine and
# Dynamo's own indexer from the venv) run with every Go package's
# (go-test in mk/10-go.mk), so the venv is built first.
KVROUTER := $(BUILD)/bin/kvrouter

BUILD_TARGETS += $(KVROUTER)
GO_TEST_DEPS  += $(VENV_STAMP)
TEST_TARGETS  += router-serve-python
BENCH_TARGETS += bench-router

.PHONY: kvrouter bench-router fuzz-router router-serve-python
kvrouter: $(KVROUTER)

# The end-to-end tests' own Python (a Dynamo-JSON publisher), typed.
router-serve-python: $(VENV_STAMP)
	$(PY) -m mypy --strict --cache-dir $(BUILD)/mypy-cache-router router/tests/testdata/dynamo_json_publisher.py

$(KVROUTER): $(GO_SOURCES)
	$(GO) build -o $@ ./cmd/kvrouter

# The figures, each printed beside its target: ingestion on one core,
# routing over HTTP while events stream in, memory per indexed (worker,
# block), and the one-pass body parses (the proxy's and the endpoint
# picker's completion body, an engine's /tokenize answer, Dynamo's
# /query) against the encoding/json ones they replaced, alternated in
# one run. About a minute and a half.
bench-router:
	@{ $(GO) test -run '^$$' -bench '^BenchmarkIngest$$' -benchtime 1s -cpu 1 -count 1 ./router/tests && \
	   $(GO) test -run '^$$' -bench '^BenchmarkRouteHTTP$$' -benchtime 5s -count 1 ./router/tests && \
	   $(GO) test -run '^$$' -bench '^BenchmarkRouteHandler$$' -benchtime 2s -cpu 1 -count 1 ./router/tests && \
	   $(GO) test -run '^$$' -bench '^BenchmarkMemoryPerBlock$$' -benchtime 3x -count 1 ./router/tests && \
	   $(GO) test -run '^$$' -bench '^BenchmarkParse(Completion|TokenizeAnswer|Query|Route)$$' -benchtime 1s -cpu 1 -count 1 ./router/proxy ./router/serve; } \
	  | $(GO) run ./router/tests/benchfig

fuzz-router:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeRouteRequest$$' -fuzztime 10s ./router/serve
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeWorkerRequest$$' -fuzztime 10s ./router/serve
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeEvents$$' -fuzztime 10s ./router/serve
	$(GO) test -run '^$$' -fuzz '^FuzzTokenList$$' -fuzztime 10s ./router/serve
	$(GO) test -run '^$$' -fuzz '^FuzzDynamoHandlers$$' -fuzztime 10s ./router/serve
	$(GO) test -run '^$$' -fuzz '^FuzzReadDynQuery$$' -fuzztime 10s ./router/serve
	$(GO) test -run '^$$' -fuzz '^FuzzDynQueryDifferential$$' -fuzztime 10s ./router/serve
	$(GO) test -run '^$$' -fuzz '^FuzzParseCompletion$$' -fuzztime 10s ./router/proxy
	$(GO) test -run '^$$' -fuzz '^FuzzValueEnd$$' -fuzztime 10s ./router/internal/jsonscan
	$(GO) test -run '^$$' -fuzz '^FuzzUint32s$$' -fuzztime 10s ./router/internal/jsonscan
	$(GO) test -run '^$$' -fuzz '^FuzzAppendCompact$$' -fuzztime 10s ./router/internal/jsonscan
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime 10s ./router/config
	$(GO) test -run '^$$' -fuzz '^FuzzCost$$' -fuzztime 10s ./router/route
	$(GO) test -run '^$$' -fuzz '^FuzzSGLangTree$$' -fuzztime 10s ./router/route/policy
	$(GO) test -run '^$$' -fuzz '^FuzzRoute$$' -fuzztime 10s ./router/route
	$(GO) test -run '^$$' -fuzz '^FuzzLoadTable$$' -fuzztime 10s ./router/route
	$(GO) test -run '^$$' -fuzz '^FuzzLoadTableAnyLists$$' -fuzztime 10s ./router/route
	$(GO) test -run '^$$' -fuzz '^FuzzParseBaseURL$$' -fuzztime 10s ./router/internal/netguard

# The overload test once more without -race: go-test's run checks that
# every request is answered; this one also holds the proxy's route p99
# under a millisecond with every engine saturated (under the detector its
# slowdown would be what the bound measures). A few seconds.
TEST_TARGETS += route-p99
.PHONY: route-p99
route-p99:
	$(GO) test -count=1 -run '^TestOverloadIsAnswered429Quickly$$' ./router/proxy
