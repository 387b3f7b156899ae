"""``python -m kvhash`` and the messages a new user meets first."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import SRC


def _run(*args: str, env_extra=None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(SRC))
    env.update(env_extra or {})
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=120)


def test_help_is_plain_text_and_exits_0():
    for flag in ("--help", "-h", "help"):
        res = _run("-m", "kvhash", flag)
        assert res.returncode == 0, res.stderr
        assert res.stdout.startswith("usage: python -m kvhash COMMAND")
        assert "doctor" in res.stdout and "version" in res.stdout
        # No reStructuredText markup (the old help was the module docstring).
        assert "``" not in res.stdout and "::" not in res.stdout
        assert res.stderr == ""


def test_no_or_unknown_command_is_a_usage_error():
    res = _run("-m", "kvhash")
    assert res.returncode == 2 and "a command is required" in res.stderr and "usage:" in res.stderr
    res = _run("-m", "kvhash", "frobnicate")
    assert res.returncode == 2 and "unknown command 'frobnicate'" in res.stderr


WITHOUT_WASMTIME = r"""
import sys
sys.modules["wasmtime"] = None  # as if it were not installed
try:
    import kvhash
except ModuleNotFoundError as e:
    print(type(e).__name__, e.name, "|", e)
else:
    print("imported", kvhash.BACKEND)
"""


def test_wasm_backend_without_wasmtime_names_the_extra():
    res = _run("-c", WITHOUT_WASMTIME, env_extra={"KVHASH_BACKEND": "wasm"})
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("ModuleNotFoundError wasmtime |"), res.stdout
    assert "pip install 'kvhash[wasm]'" in res.stdout
    # The native backend does not need it.
    res = _run("-c", WITHOUT_WASMTIME)
    assert res.stdout.strip() == "imported native", res.stdout + res.stderr
