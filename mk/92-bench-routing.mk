# make bench-routing: routing quality on a virtual clock (kvrouter sim,
# router/sim; docs/guides/routing-benchmark.md). Every policy at five
# loads on 8 engines, over the vendored Mooncake synthetic trace and the
# generated trace's two families apart (a shared system prompt with
# multi-turn conversations; many tenants with distinct long prefixes),
# five seeds each; results, tables and plots go to
# docs/figures/routing/, and the tables into the README between their
# markers. A few minutes on two cores: a standalone target, not part of
# make bench.
.PHONY: bench-routing

ROUTING_OUT := docs/figures/routing
ROUTING_LOADS := 0.3,0.5,0.8,1.0,1.2
# Seeds change the policies' tie-breaks and draws: intervals over five.
ROUTING_SEEDS := 5
# The generated families at 16,000 requests (69-74 s of arrivals at load
# 1.0): at 4,000 their arrivals at load 1.0 last 17-19 s, less than a
# request's end-to-end time there, so a run measures the fleet's warm-up.
ROUTING_GENERATED := --generated-requests 16000

bench-routing: $(KVROUTER)
	$(KVROUTER) sim --engines 8 --load $(ROUTING_LOADS) --seeds $(ROUTING_SEEDS) --out $(ROUTING_OUT)/synthetic
	$(KVROUTER) sim --engines 8 --load $(ROUTING_LOADS) --seeds $(ROUTING_SEEDS) --trace generated-chat $(ROUTING_GENERATED) --out $(ROUTING_OUT)/generated-chat
	$(KVROUTER) sim --engines 8 --load $(ROUTING_LOADS) --seeds $(ROUTING_SEEDS) --trace generated-tenants $(ROUTING_GENERATED) --out $(ROUTING_OUT)/generated-tenants
	@for t in synthetic generated-chat generated-tenants; do \
	  awk -v begin="<!-- bench-routing:$$t -->" -v end="<!-- /bench-routing:$$t -->" -v file="$(ROUTING_OUT)/$$t/table.md" \
	    '$$0 == begin { print; while ((getline l < file) > 0) print l; skip = 1; next } $$0 == end { skip = 0 } !skip' \
	    README.md > README.md.tmp && mv README.md.tmp README.md; \
	done
	@echo "README.md's routing tables updated from $(ROUTING_OUT)/*/table.md"

TEST_TARGETS += sim-dynamo

.PHONY: sim-dynamo
# The simulator against Dynamo's own (DynoSim, from the wheel in the venv)
# on the vendored trace: a missing venv is a failure here, not a skip;
# then the replay script's types.
sim-dynamo: $(VENV_STAMP)
	KVHASH_REQUIRE_VENV=1 $(GO) test -count=1 -run '^TestAgreesWithDynoSim$$' ./router/sim
	$(VENV)/bin/mypy --strict --no-error-summary --cache-dir $(BUILD)/mypy-cache-sim router/sim/testdata/dynosim_replay.py

.PHONY: fuzz-sim
# The simulator on cramped fleets and the proxy's /metrics parser, briefly.
fuzz-sim:
	$(GO) test -run '^$$' -fuzz '^FuzzRun$$' -fuzztime 10s ./router/sim
	$(GO) test -run '^$$' -fuzz '^FuzzParseVLLMGauges$$' -fuzztime 10s ./router/proxy
