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
TEST_TARGETS  += python-test python-typecheck
BENCH_TARGETS += bench-python

.PHONY: python python-test python-typecheck bench-python

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

# The package ships py.typed, so its annotations are a promise: mypy --strict
# (python/pyproject.toml [tool.mypy]) on the venv's Python, then on the oldest
# Python the package supports (requires-python >=3.9) to catch newer stdlib
# or syntax. numpy's stubs need Python 3.11+, so on 3.9 numpy is untyped and
# the numpy overloads of the hashing functions cannot be told apart from the
# general one: that one error code is off there (the first run checks it).
PY_MYPY := $(PY) -m mypy --config-file python/pyproject.toml --cache-dir $(BUILD)/mypy-cache

python-typecheck: $(VENV_STAMP)
	$(PY_MYPY) python/src/kvhash
	$(PY_MYPY) --python-version 3.9 --disable-error-code overload-cannot-match python/src/kvhash

bench-python: $(BUILD)/libkvhash.so $(BUILD)/kvhash.wasm $(VENV_STAMP)
	$(PY_ARTEFACT_ENV) PYTHONPATH=python/src $(PY) python/benchmarks/bench_hash.py
