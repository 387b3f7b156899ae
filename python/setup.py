"""Wheel build for kvhash: a platform wheel that bundles the shared library
and the WASM module.

Static metadata lives in pyproject.toml; this file only does what it cannot:

- the version is the library's own (``kvhash_version``), so Python never
  restates a fact the library owns;
- ``build_py`` copies ``libkvhash.so`` and ``kvhash.wasm`` into the staged
  package (``kvhash/_lib/``), never into the source tree;
- ``bdist_wheel`` tags the wheel ``py3-none-<platform>``: the package is pure
  Python over a native library it loads with ctypes, so it fits every
  CPython 3 on the platform but only that platform;
- intermediate files go under the repository's ``build/python/``.

Artefacts: ``KVHASH_LIBRARY`` and ``KVHASH_WASM`` if set, else
``../build/libkvhash.so`` and ``../build/kvhash.wasm``. Build offline with
``python -m pip wheel --no-deps --no-build-isolation -w ../build/dist .``
(``make python`` does).
"""

import ctypes
import os
import shutil
import sysconfig

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py
from setuptools.command.bdist_wheel import bdist_wheel

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


class BinaryDistribution(Distribution):
    """Platform-specific although it compiles nothing: the package ships a
    shared library. This makes the build stage it as platlib (so the wheel
    has Root-Is-Purelib: false and installs into platlib)."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    """A py3-none-<platform> wheel (a shared library, no extension module,
    so no CPython ABI tag)."""

    def get_tag(self):
        plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
        return "py3", "none", plat


setup(
    distclass=BinaryDistribution,
    version=_library_version(),
    cmdclass={"build_py": BuildPyWithLibrary, "bdist_wheel": PlatformWheel},
    options={
        "build": {"build_base": STAGE},
        "egg_info": {"egg_base": STAGE},
    },
)
