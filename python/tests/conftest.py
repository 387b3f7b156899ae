"""Shared test setup.

The tests import the package from python/src (not an installed copy) and the
oracle from conformance/oracle. The library and WASM module come from
KVHASH_LIBRARY / KVHASH_WASM, which default to the repository's build/
artefacts so that plain `pytest python/tests` works after `make build`. The
C extension kvhash._speedups comes from KVHASH_SPEEDUPS (make sets it to
build/pyext/kvhash/_speedups.so, and KVHASH_EXPECT_SPEEDUPS=1 so that its
absence fails the run); without it the package uses its array fallback.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "python" / "src"
ORACLE_DIR = REPO / "conformance" / "oracle"
VECTORS_DIR = REPO / "conformance" / "vectors" / "v1"
BUILD = REPO / "build"

os.environ.setdefault("KVHASH_LIBRARY", str(BUILD / "libkvhash.so"))
os.environ.setdefault("KVHASH_WASM", str(BUILD / "kvhash.wasm"))
# Tests pick their backend explicitly; `import kvhash` must be the native one.
os.environ.pop("KVHASH_BACKEND", None)
for path in (str(SRC), str(ORACLE_DIR)):
    if path not in sys.path:
        sys.path.insert(0, path)

# No example database in the checkout; CI-sized example counts.
settings.register_profile("kvhash", database=None, deadline=None, max_examples=100)
settings.load_profile("kvhash")

BACKENDS = ("native", "wasm")

#: Whether the run must exercise the C extension (make test sets it).
EXPECT_SPEEDUPS = os.environ.get("KVHASH_EXPECT_SPEEDUPS") == "1"
SPEEDUPS_SO = BUILD / "pyext" / "kvhash" / "_speedups.so"


def load_backend(name: str):
    """The public API bound to one backend: kvhash._native or kvhash.wasm."""
    return importlib.import_module("kvhash._native" if name == "native" else "kvhash.wasm")


@pytest.fixture(params=BACKENDS, scope="session")
def kv(request):
    """The kvhash API of each backend in turn (same names as `kvhash`)."""
    return load_backend(request.param)


def vector_files():
    return sorted(VECTORS_DIR.glob("*.json"))


def load_vectors(path: Path) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def require_speedups(speedups, reason):
    """Fail (when the run expects the extension) or skip unless it is loaded."""
    if speedups is None:
        message = "kvhash._speedups is not in use: %s" % reason
        if EXPECT_SPEEDUPS:
            pytest.fail("KVHASH_EXPECT_SPEEDUPS=1, but " + message)
        pytest.skip(message)


@pytest.fixture(params=("speedups", "fallback"), scope="module")
def conversion(request):
    """Each test of a module that uses it (``pytestmark``) runs with lists
    of ints converted by the C extension, then by the array fallback."""
    from kvhash import _ints

    if request.param == "speedups":
        require_speedups(_ints.speedups, _ints.unavailable_reason)
        yield request.param
        return
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_ints, "speedups", None)
        yield request.param
