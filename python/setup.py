"""Wheel build for kvhash: a CPython wheel that bundles the shared library,
the WASM module and the ``kvhash._speedups`` extension.

Static metadata lives in pyproject.toml; this file only does what it cannot:

- the version is the library's own (``kvhash_version``), so Python never
  restates a fact the library owns;
- ``build_py`` copies ``libkvhash.so`` and ``kvhash.wasm`` into the staged
  package (``kvhash/_lib/``), never into the source tree;
- ``build_ext`` compiles ``kvhash._speedups`` (src/kvhash/_speedups.c: list
  conversion only, the package works without it). Being compiled against
  CPython's API (not the limited one: it reads ints' digits), it makes the
  wheel ``cp3X-cp3X-<platform>``, one interpreter version on one platform;
  setuptools' own bdist_wheel tags it so, and ``make python`` then has
  ``auditwheel repair`` retag it ``manylinux_2_NN`` (what package indexes
  accept). The limited API (one ``abi3`` wheel for every CPython) was
  measured and rejected: without reading digits the extension is no faster
  than the ``array`` fallback it exists to beat (docs/api/python.md);
- intermediate files go under the repository's ``build/python/``.

Artefacts: ``KVHASH_LIBRARY`` and ``KVHASH_WASM`` if set, else
``../build/libkvhash.so`` and ``../build/kvhash.wasm``. Build offline with
``python -m pip wheel --no-deps --no-build-isolation -w ../build/dist .``
(``make python`` does).
"""

import ctypes
import os
import shutil

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
STAGE = os.path.join(ROOT, "build", "python")


def _artefact(env: str, name: str) -> str:
    path = os.environ.get(env) or os.path.join(ROOT, "build", name)
    if not os.path.isfile(path):
        raise SystemExit(
            "kvhash wheel: %s not found at %s (build it first: make build/%s, or set %s)" % (name, path, name, env)
        )
    return path


def _library_version() -> str:
    lib = ctypes.CDLL(_artefact("KVHASH_LIBRARY", "libkvhash.so"))
    lib.kvhash_version.restype = ctypes.c_char_p
    lib.kvhash_version.argtypes = []
    return lib.kvhash_version().decode("utf-8")


class BuildPyWithLibrary(build_py):
    """build_py, plus the library and the WASM module in kvhash/_lib/."""

    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "kvhash", "_lib")
        os.makedirs(target, exist_ok=True)
        shutil.copyfile(_artefact("KVHASH_LIBRARY", "libkvhash.so"), os.path.join(target, "libkvhash.so"))
        shutil.copyfile(_artefact("KVHASH_WASM", "kvhash.wasm"), os.path.join(target, "kvhash.wasm"))


# The flags of mk/50-python.mk's test build: the same code, warning-free.
SPEEDUPS = Extension(
    "kvhash._speedups",
    sources=["src/kvhash/_speedups.c"],
    extra_compile_args=["-O2", "-Wall", "-Wextra", "-Werror"],
)


setup(
    version=_library_version(),
    ext_modules=[SPEEDUPS],
    cmdclass={"build_py": BuildPyWithLibrary},
    options={
        "build": {"build_base": STAGE},
        "egg_info": {"egg_base": STAGE},
    },
)
