# router/enginehash: engines' own block ids, checked against a Python oracle
# (testdata/oracle.py: CPython's pickle, cbor2, hashlib, xxhash). Its Go
# tests run with every Go package's (go-test); they need the venv, and here
# a missing venv is a failure, not a skip (KVHASH_REQUIRE_VENV=1).
ENGINEHASH_DIR := router/enginehash
# vLLM's own source, for the optional check against it: a wheel, no deps.
ENGINEHASH_VLLM_VERSION ?= 0.33.0
ENGINEHASH_VLLM_DIR     := $(BUILD)/vllm-$(ENGINEHASH_VLLM_VERSION)

GO_TEST_DEPS += $(VENV_STAMP)
TEST_TARGETS += enginehash-oracle

.PHONY: enginehash-oracle enginehash-vectors enginehash-vllm-check

# The oracle's drift guard, property test and vector tests, then the oracle
# scripts' types.
enginehash-oracle: $(VENV_STAMP)
	KVHASH_REQUIRE_VENV=1 $(GO) test -count=1 -run 'Oracle|Random|Verifier' ./$(ENGINEHASH_DIR)
	$(VENV)/bin/mypy --strict --no-error-summary $(ENGINEHASH_DIR)/testdata/oracle.py $(ENGINEHASH_DIR)/testdata/vllm_check.py

# Regenerate the committed vectors (review the diff).
enginehash-vectors: $(VENV_STAMP)
	$(PY) $(ENGINEHASH_DIR)/testdata/oracle.py generate > $(ENGINEHASH_DIR)/testdata/vectors.json

# Not part of make test (downloads a 300+ MB wheel once): the vectors
# against vLLM's own kv_cache_utils.py and hashing.py.
$(ENGINEHASH_VLLM_DIR)/.unpacked: $(VENV_STAMP)
	@mkdir -p $(ENGINEHASH_VLLM_DIR)
	$(VENV)/bin/pip download --quiet --disable-pip-version-check --no-deps --only-binary :all: \
	  -d $(ENGINEHASH_VLLM_DIR) vllm==$(ENGINEHASH_VLLM_VERSION)
	cd $(ENGINEHASH_VLLM_DIR) && unzip -o -q vllm-$(ENGINEHASH_VLLM_VERSION)-*.whl \
	  vllm/utils/hashing.py vllm/v1/core/kv_cache_utils.py && rm -f vllm-*.whl
	touch $@

enginehash-vllm-check: $(ENGINEHASH_VLLM_DIR)/.unpacked
	KVHASH_VLLM_DIR=$(abspath $(ENGINEHASH_VLLM_DIR)) $(GO) test -count=1 -v -run 'VectorsAgainstVLLMSource' ./$(ENGINEHASH_DIR)
