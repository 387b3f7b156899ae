# The Python package (python/): a CPython wheel that bundles libkvhash.so,
# kvhash.wasm and the kvhash._speedups extension, its tests, and its
# benchmark.
PY_WHEEL_DIR   := $(BUILD)/dist
# The wheel's file name carries the library's version, which make does not
# know; a stamp stands for it.
PY_WHEEL_STAMP := $(PY_WHEEL_DIR)/.kvhash-wheel.stamp
PY_SPEEDUPS_SRC := python/src/kvhash/_speedups.c
PY_PKG_SOURCES := $(shell find python/src -type f -name '*.py' -o -type f -name '*.pyi' 2>/dev/null) \
                  $(PY_SPEEDUPS_SRC) \
                  python/src/kvhash/py.typed python/pyproject.toml python/setup.py python/README.md
# The extension for the tests and the benchmark, which import the package
# from python/src: built here, out of the source tree, and loaded through
# KVHASH_SPEEDUPS (a plain .so suffix: make cannot know the interpreter's
# before the venv exists). setup.py builds the wheel's copy itself.
PY_SPEEDUPS     := $(BUILD)/pyext/kvhash/_speedups.so
PY_EXT_CC       ?= cc
PY_EXT_CFLAGS   := -O2 -Wall -Wextra -Werror -fPIC -shared
# Tests and the benchmark use the build's artefacts, not an installed copy.
PY_ARTEFACT_ENV := KVHASH_LIBRARY=$(abspath $(BUILD))/libkvhash.so KVHASH_WASM=$(abspath $(BUILD))/kvhash.wasm \
                   KVHASH_SPEEDUPS=$(abspath $(PY_SPEEDUPS))

BUILD_TARGETS += python
TEST_TARGETS  += python-test python-typecheck
BENCH_TARGETS += bench-python

.PHONY: python python-test python-typecheck bench-python

python: $(PY_WHEEL_STAMP)

# Python.h comes from the venv's interpreter, asked at build time (the venv
# may not exist when make reads this file). Built aside and moved into place.
$(PY_SPEEDUPS): $(PY_SPEEDUPS_SRC) $(VENV_STAMP)
	@mkdir -p $(@D)
	$(PY_EXT_CC) $(PY_EXT_CFLAGS) \
	  -I"$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" -o $@.tmp $<
	mv -f $@.tmp $@

# Offline: the pinned setuptools and wheel of the venv build it
# (--no-build-isolation), no download. setup.py stages everything under
# build/python, copies the two artefacts into the staged package and
# compiles the extension there. The result is tagged linux_x86_64, which no
# package index accepts: auditwheel checks every ELF file in it against the
# manylinux policies (glibc symbol versions, allowed libraries) and retags
# it with the most compatible manylinux tag it meets (libkvhash.so's glibc
# symbols decide). Its log is shown only when it fails.
PY_WHEEL_RAW := $(BUILD)/python-wheel-raw
$(PY_WHEEL_STAMP): $(BUILD)/libkvhash.so $(BUILD)/kvhash.wasm $(VENV_STAMP) $(PY_PKG_SOURCES)
	@mkdir -p $(PY_WHEEL_DIR)
	rm -rf $(BUILD)/python $(PY_WHEEL_RAW) $(PY_WHEEL_DIR)/kvhash-*.whl
	$(PY_ARTEFACT_ENV) $(PY) -m pip wheel --quiet --disable-pip-version-check \
	  --no-deps --no-build-isolation --no-index -w $(PY_WHEEL_RAW) python/
	@PATH="$(abspath $(VENV))/bin:$$PATH" auditwheel repair -w $(PY_WHEEL_DIR) $(PY_WHEEL_RAW)/kvhash-*.whl > $(PY_WHEEL_RAW)/auditwheel.log 2>&1 \
	  || { cat $(PY_WHEEL_RAW)/auditwheel.log; exit 1; }
	@ls $(PY_WHEEL_DIR)/kvhash-*-cp3*-cp3*-manylinux_*.whl
	touch $@

# Depends on the wheel: one test installs it into a fresh venv.
# KVHASH_EXPECT_SPEEDUPS: a test fails unless the extension is in use.
# KVHASH_EXPECT_DYNAMO: the differential tests against Dynamo's wheel
# (requirements-dev.txt) fail, not skip, when it cannot be imported.
# KVHASH_EXPECT_KVROUTER: the live doctor's tests (test_doctor_live.py) fail,
# not skip, without the Go binaries they run, built first (mk/80-router.mk,
# mk/85-kvmock.mk; named by path: those files are read after this one).
python-test: $(PY_WHEEL_STAMP) $(PY_SPEEDUPS) $(BUILD)/bin/kvrouter $(BUILD)/bin/kvmock
	$(PY_ARTEFACT_ENV) KVHASH_EXPECT_SPEEDUPS=1 KVHASH_EXPECT_KVROUTER=1 KVHASH_EXPECT_DYNAMO=1 KVHASH_WHEEL_DIR=$(abspath $(PY_WHEEL_DIR)) \
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

bench-python: $(BUILD)/libkvhash.so $(BUILD)/kvhash.wasm $(PY_SPEEDUPS) $(VENV_STAMP)
	$(PY_ARTEFACT_ENV) PYTHONPATH=python/src $(PY) python/benchmarks/bench_hash.py
	$(PY_ARTEFACT_ENV) PYTHONPATH=python/src $(PY) python/benchmarks/bench_call_cost.py
