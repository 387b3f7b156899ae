# The Python package (python/): a platform wheel that bundles libkvhash.so
# and kvhash.wasm, its tests, and its benchmark.
PY_WHEEL_DIR   := $(BUILD)/dist
# The wheel's file name carries the library's version, which make does not
# know; a stamp stands for it.
PY_WHEEL_STAMP := $(PY_WHEEL_DIR)/.kvhash-wheel.stamp
PY_PKG_SOURCES := $(shell find python/src -type f -name '*.py' 2>/dev/null) \
                  python/src/kvhash/py.typed python/pyproject.toml python/setup.py python/README.md
# Tests and the benchmark use the build's artefacts, not an installed copy.
PY_ARTEFACT_ENV := KVHASH_LIBRARY=$(abspath $(BUILD))/libkvhash.so KVHASH_WASM=$(abspath $(BUILD))/kvhash.wasm

BUILD_TARGETS += python
TEST_TARGETS  += python-test
BENCH_TARGETS += bench-python

.PHONY: python python-test bench-python

python: $(PY_WHEEL_STAMP)

# Offline: the pinned setuptools and wheel of the venv build it
# (--no-build-isolation), no download. setup.py stages everything under
# build/python and copies the two artefacts into the staged package.
$(PY_WHEEL_STAMP): $(BUILD)/libkvhash.so $(BUILD)/kvhash.wasm $(VENV_STAMP) $(PY_PKG_SOURCES)
	@mkdir -p $(PY_WHEEL_DIR)
	rm -rf $(BUILD)/python $(PY_WHEEL_DIR)/kvhash-*.whl
	$(PY_ARTEFACT_ENV) $(PY) -m pip wheel --quiet --disable-pip-version-check \
	  --no-deps --no-build-isolation --no-index -w $(PY_WHEEL_DIR) python/
	@ls $(PY_WHEEL_DIR)/kvhash-*-py3-none-*.whl
	touch $@

# Depends on the wheel: one test installs it into a fresh venv.
python-test: $(PY_WHEEL_STAMP)
	$(PY_ARTEFACT_ENV) KVHASH_WHEEL_DIR=$(abspath $(PY_WHEEL_DIR)) \
	  $(PY) -m pytest -p no:cacheprovider -q python/tests

bench-python: $(BUILD)/libkvhash.so $(BUILD)/kvhash.wasm $(VENV_STAMP)
	$(PY_ARTEFACT_ENV) PYTHONPATH=python/src $(PY) python/benchmarks/bench_hash.py
