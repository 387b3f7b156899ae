"""The wheel: a platform wheel with the library and the WASM module inside,
installable offline into a fresh venv and usable from any directory."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest
from conftest import BUILD

WHEEL_DIR = Path(os.environ.get("KVHASH_WHEEL_DIR", str(BUILD / "dist")))


def _wheel() -> Path:
    wheels = sorted(WHEEL_DIR.glob("kvhash-*.whl"))
    assert len(wheels) == 1, "expected exactly one kvhash wheel in %s (run make python), found %s" % (
        WHEEL_DIR,
        [w.name for w in wheels],
    )
    return wheels[0]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_wheel_is_a_platform_wheel_with_both_artefacts():
    wheel = _wheel()
    name, version, py, abi, plat = wheel.stem.split("-")
    assert name == "kvhash"
    assert (py, abi) == ("py3", "none")
    assert plat == sysconfig.get_platform().replace("-", "_").replace(".", "_")
    assert plat != "any"
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        for member in (
            "kvhash/__init__.py",
            "kvhash/_api.py",
            "kvhash/_native.py",
            "kvhash/wasm.py",
            "kvhash/doctor.py",
            "kvhash/__main__.py",
            "kvhash/py.typed",
            "kvhash/_lib/libkvhash.so",
            "kvhash/_lib/kvhash.wasm",
        ):
            assert member in names, member
        wheel_meta = z.read("kvhash-%s.dist-info/WHEEL" % version).decode()
        assert "Root-Is-Purelib: false" in wheel_meta
        assert "Tag: py3-none-%s" % plat in wheel_meta
        # The bundled artefacts are the ones this test run uses.
        lib = Path(os.environ["KVHASH_LIBRARY"])
        mod = Path(os.environ["KVHASH_WASM"])
        assert _sha(z.read("kvhash/_lib/libkvhash.so")) == _sha(lib.read_bytes())
        assert _sha(z.read("kvhash/_lib/kvhash.wasm")) == _sha(mod.read_bytes())
        # No tests, benchmarks or build leftovers.
        assert not any(n.startswith(("tests/", "benchmarks/")) or "__pycache__" in n for n in names)
    import kvhash

    assert version == kvhash.__version__


SCRIPT = r"""
import json, os, sys
sys.path.append(sys.argv[1])  # the build venv's site-packages, for wasmtime only
import kvhash
out = {
    "file": kvhash.__file__,
    "version": kvhash.__version__,
    "spec": kvhash.SPEC_VERSION,
    "backend": kvhash.BACKEND,
    "hashes": kvhash.compute_block_hash_for_seq(list(range(1, 13)), 4),
}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh venv with only the wheel installed (offline, no deps)."""
    root = tmp_path_factory.mktemp("wheel-venv")
    env_dir = root / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--disable-pip-version-check", str(_wheel())],
        check=True,
        cwd=root,
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KVHASH_", "PYTHON"))}
    return python, root, env


def _run(installed, *args, extra_env=None):
    python, root, env = installed
    return subprocess.run(
        [str(python), *args], cwd=root, env=dict(env, **(extra_env or {})), capture_output=True, text=True
    )


def _site_packages() -> str:
    return sysconfig.get_paths()["purelib"]


@pytest.mark.parametrize("backend", ["native", "wasm"])
def test_installed_wheel_imports_from_anywhere(installed, backend):
    python, root, _ = installed
    res = _run(installed, "-c", SCRIPT, _site_packages(), extra_env={"KVHASH_BACKEND": backend})
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["file"].startswith(str(root / "venv")), out["file"]
    assert out["backend"] == backend
    assert out["spec"] == "v1"
    assert out["hashes"] == [14643705804678351452, 16777012769546811212, 483935686894639516]


def test_installed_wheel_runs_the_doctor(installed):
    res = _run(installed, "-m", "kvhash", "doctor", "--json", "--", "vllm", "serve", "m", "--no-enable-prefix-caching")
    assert res.returncode == 1, res.stderr
    ids = {f["id"] for f in json.loads(res.stdout)}
    assert "prefix-caching-off" in ids and "kv-events-off" in ids


def test_installed_wheel_without_the_library_explains(installed):
    res = _run(installed, "-c", "import kvhash", extra_env={"KVHASH_LIBRARY": "/nonexistent/libkvhash.so"})
    assert res.returncode != 0
    assert "KVHASH_LIBRARY" in res.stderr and "/nonexistent/libkvhash.so" in res.stderr
