"""The wheel: a CPython wheel with the library, the WASM module and the
kvhash._speedups extension inside, installable offline into a fresh venv and
usable from any directory, with the extension in use."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
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


def test_wheel_is_a_manylinux_cpython_wheel_with_the_artefacts_and_the_extension():
    wheel = _wheel()
    name, version, py, abi, plat = wheel.stem.split("-")
    assert name == "kvhash"
    # An extension module ties the wheel to this interpreter's version and ABI.
    cp = "cp%d%d" % sys.version_info[:2]
    assert (py, abi) == (cp, cp)
    # A tag package indexes accept (issue 10, item 21): manylinux_2_NN for
    # this machine's architecture, given by auditwheel repair.
    arch = sysconfig.get_platform().split("-", 1)[1].replace("-", "_")
    assert re.fullmatch(r"manylinux_2_\d+_" + re.escape(arch), plat), plat
    assert not plat.startswith("linux_")
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
            "kvhash/_speedups" + sysconfig.get_config_var("EXT_SUFFIX"),
            "kvhash/_speedups.pyi",
        ):
            assert member in names, member
        # The C source stays out: the wheel carries the compiled module.
        assert not any(n.endswith((".c", ".o")) for n in names)
        wheel_meta = z.read("kvhash-%s.dist-info/WHEEL" % version).decode()
        assert "Root-Is-Purelib: false" in wheel_meta
        assert "Tag: %s-%s-%s" % (cp, cp, plat) in wheel_meta
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
    "speedups": kvhash.SPEEDUPS,
    "speedups_file": getattr(sys.modules.get("kvhash._speedups"), "__file__", None),
    "hashes": kvhash.compute_block_hash_for_seq(list(range(1, 13)), 4),
    "seq": kvhash.compute_seq_hash_for_block([14643705804678351452, 16777012769546811212, 483935686894639516]),
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
    # The bundled extension converts the lists, whatever the backend.
    assert out["speedups"] is True
    assert out["speedups_file"].startswith(str(root / "venv")), out["speedups_file"]
    assert out["hashes"] == [14643705804678351452, 16777012769546811212, 483935686894639516]
    assert out["seq"] == [14643705804678351452, 4945711292740353085, 12583592247330656132]


def test_installed_wheel_without_speedups_gives_the_same_hashes(installed):
    res = _run(installed, "-c", SCRIPT, _site_packages(), extra_env={"KVHASH_SPEEDUPS": "0"})
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["speedups"] is False and out["speedups_file"] is None
    assert out["hashes"] == [14643705804678351452, 16777012769546811212, 483935686894639516]
    assert out["seq"] == [14643705804678351452, 4945711292740353085, 12583592247330656132]


def test_installed_wheel_reports_speedups_in_its_version(installed):
    res = _run(installed, "-m", "kvhash", "version")
    assert res.returncode == 0, res.stderr
    assert "speedups on" in res.stdout


def test_installed_wheel_runs_the_doctor(installed):
    res = _run(installed, "-m", "kvhash", "doctor", "--json", "--", "vllm", "serve", "m", "--no-enable-prefix-caching")
    assert res.returncode == 1, res.stderr
    ids = {f["id"] for f in json.loads(res.stdout)}
    assert "prefix-caching-off" in ids and "kv-events-off" in ids


def test_installed_wheel_without_the_library_explains(installed):
    res = _run(installed, "-c", "import kvhash", extra_env={"KVHASH_LIBRARY": "/nonexistent/libkvhash.so"})
    assert res.returncode != 0
    assert "KVHASH_LIBRARY" in res.stderr and "/nonexistent/libkvhash.so" in res.stderr


def test_installed_wheel_names_the_wasm_extra_when_wasmtime_is_missing(installed):
    # The fresh venv has no wasmtime (the wheel has no dependencies).
    res = _run(installed, "-c", "import kvhash", extra_env={"KVHASH_BACKEND": "wasm"})
    assert res.returncode != 0
    assert "ModuleNotFoundError" in res.stderr and "pip install 'kvhash[wasm]'" in res.stderr, res.stderr


def test_installed_wheel_declares_the_pinned_extras(installed):
    python, _, _ = installed
    res = _run(
        installed,
        "-c",
        "import importlib.metadata as m; print('\\n'.join(m.requires('kvhash') or []))",
    )
    assert res.returncode == 0, res.stderr
    requires = res.stdout.splitlines()
    assert any(r.startswith("wasmtime") and "<38" in r and ">=37" in r and 'extra == "wasm"' in r for r in requires), requires
    assert any(r.startswith("numpy") and 'extra == "numpy"' in r for r in requires), requires


def test_installed_wheel_help_is_plain_text(installed):
    res = _run(installed, "-m", "kvhash", "--help")
    assert res.returncode == 0 and res.stdout.startswith("usage: python -m kvhash"), res.stderr


# -- the documented example (issue 10, item 20)

DOC = Path(__file__).resolve().parents[2] / "docs" / "api" / "python.md"
DOC_MARKER = "<!-- The code block below and the output block after it are run by"


def _documented_example() -> "tuple[str, str]":
    """The code block after the marker in docs/api/python.md and the text
    block after it (what it prints)."""
    text = DOC.read_text(encoding="utf-8")
    assert DOC_MARKER in text, "the example marker is gone from %s" % DOC
    after = text.split(DOC_MARKER, 1)[1]
    code = re.search(r"```python\n(.*?)```", after, re.S)
    output = re.search(r"```text\n(.*?)```", after, re.S)
    assert code and output and code.end() < output.start()
    return code.group(1), output.group(1)


def test_documented_example_runs_against_the_installed_wheel(installed):
    # A fresh venv with only the wheel: no numpy, no repository on the path.
    code, want = _documented_example()
    res = _run(installed, "-c", code)
    assert res.returncode == 0, res.stderr
    assert res.stdout == want
