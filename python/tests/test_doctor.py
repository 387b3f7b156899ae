"""The engine doctor: every finding, engine detection, the CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import REPO, SRC

from kvhash import doctor
from kvhash.doctor import FINDING_IDS, check, detect_engine

EVENTS = '{"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": "tcp://*:5557"}'
SEED = {"PYTHONHASHSEED": "0"}
GOOD_VLLM = ["vllm", "serve", "m", "--block-size", "16", "--kv-events-config", EVENTS]
GOOD_SGLANG = ["python", "-m", "sglang.launch_server", "--model-path", "m", "--page-size", "16", "--kv-events-config", '{"publisher": "zmq"}']


def ids(findings):
    return [f.id for f in findings]


def sev(findings, finding_id):
    (f,) = [f for f in findings if f.id == finding_id]
    return f.severity


@pytest.fixture
def trt_options(tmp_path):
    def write(text, name="extra.yaml"):
        p = tmp_path / name
        p.write_text(text)
        return str(p)

    return write


# Every finding id, one command line that triggers it: (argv, env, kwargs, id, severity).
TRIGGERS = [
    (["./serve.sh", "--block-size", "16"], SEED, {}, "engine-unknown", "error"),
    (GOOD_VLLM + ["--no-enable-prefix-caching"], SEED, {"router_block_size": 16}, "prefix-caching-off", "error"),
    (GOOD_SGLANG + ["--disable-radix-cache"], {}, {"router_block_size": 16}, "prefix-caching-off", "error"),
    (["vllm", "serve", "m", "--block-size", "16"], SEED, {"router_block_size": 16}, "kv-events-off", "error"),
    (["vllm", "serve", "m", "--kv-events-config", '{"publisher": "zmq"}'], SEED, {}, "kv-events-off", "error"),
    (["vllm", "serve", "m", "--kv-events-config", "{enable: true}"], SEED, {}, "kv-events-config-invalid", "error"),
    (["vllm", "serve", "m", "--kv-events-config", "[1]"], SEED, {}, "kv-events-config-invalid", "error"),
    (
        ["vllm", "serve", "m", "--kv-events-config", '{"enable_kv_cache_events": true, "publisher": "null"}'],
        SEED, {}, "kv-events-publisher-null", "error",
    ),
    (
        ["vllm", "serve", "m", "--kv-events-config", '{"enable_kv_cache_events": true}'],
        SEED, {}, "kv-events-publisher-default", "warning",
    ),
    (GOOD_VLLM + ["--prefix-caching-hash-algo", "xxhash"], {}, {}, "hash-algo-random-root", "error"),
    (GOOD_VLLM + ["--prefix-caching-hash-algo=xxhash_cbor"], {"PYTHONHASHSEED": "random"}, {}, "hash-algo-random-root", "error"),
    (GOOD_VLLM + ["--prefix-caching-hash-algo", "builtin"], {}, {}, "hash-algo-builtin", "error"),
    (GOOD_VLLM + ["--prefix-caching-hash-algo", "builtin"], SEED, {}, "hash-algo-builtin", "warning"),
    (GOOD_VLLM + ["--prefix-caching-hash-algo", "md5"], SEED, {}, "hash-algo-unknown", "warning"),
    (GOOD_VLLM, {}, {}, "pythonhashseed-unset", "warning"),
    (GOOD_VLLM + ["--prefix-caching-hash-algo", "sha256_cbor"], {}, {}, "pythonhashseed-unset", "warning"),
    (GOOD_VLLM, {"PYTHONHASHSEED": "random"}, {}, "pythonhashseed-random", "warning"),
    (GOOD_VLLM, {"PYTHONHASHSEED": "abc"}, {}, "pythonhashseed-invalid", "error"),
    (GOOD_VLLM, {"PYTHONHASHSEED": "4294967296"}, {}, "pythonhashseed-invalid", "error"),
    (GOOD_SGLANG, {"PYTHONHASHSEED": "-1"}, {}, "pythonhashseed-invalid", "error"),
    (GOOD_VLLM, SEED, {"router_block_size": 32}, "block-size-mismatch", "error"),
    (["vllm", "serve", "m", "--kv-events-config", EVENTS], SEED, {"router_block_size": 32}, "block-size-mismatch", "error"),
    (GOOD_SGLANG[:5] + GOOD_SGLANG[7:], {}, {"router_block_size": 16}, "block-size-mismatch", "error"),
    (["vllm", "serve", "m", "--kv-events-config", EVENTS], SEED, {"router_block_size": 16}, "block-size-implicit", "warning"),
    (["vllm", "serve", "m", "--block-size", "x", "--kv-events-config", EVENTS], SEED, {"router_block_size": 16}, "block-size-invalid", "error"),
    (["vllm", "serve", "m", "--block-size", "0", "--kv-events-config", EVENTS], SEED, {"router_block_size": 16}, "block-size-invalid", "error"),
    (GOOD_VLLM, SEED, {}, "block-size-unchecked", "info"),
    (GOOD_VLLM + ["--config", "/nonexistent/vllm.yaml"], SEED, {}, "config-file-unreadable", "warning"),
]


@pytest.mark.parametrize("argv, env, kwargs, finding_id, severity", TRIGGERS, ids=[t[3] for t in TRIGGERS])
def test_each_finding(argv, env, kwargs, finding_id, severity):
    findings = check(argv, env=env, **kwargs)
    assert finding_id in ids(findings), findings
    assert sev(findings, finding_id) == severity
    f = next(f for f in findings if f.id == finding_id)
    assert f.message and f.fix
    assert str(f).startswith(severity) and finding_id in str(f) and "Fix:" in str(f)


def test_every_finding_id_is_triggered_and_documented():
    assert {t[3] for t in TRIGGERS} == set(FINDING_IDS)
    guide = (REPO / "docs" / "guides" / "engine-doctor.md").read_text()
    for finding_id in FINDING_IDS:
        assert "`%s`" % finding_id in guide, finding_id


def test_clean_configurations_have_no_problems():
    assert check(GOOD_VLLM, env=SEED, router_block_size=16) == []
    assert check(GOOD_VLLM + ["--prefix-caching-hash-algo", "xxhash"], env=SEED, router_block_size=16) == []
    assert check(GOOD_SGLANG, env={}, router_block_size=16) == []


def test_findings_are_sorted_errors_first():
    findings = check(["vllm", "serve", "m", "--kv-events-config", '{"enable_kv_cache_events": true}', "--no-enable-prefix-caching"], env={})
    order = [doctor.SEVERITIES.index(f.severity) for f in findings]
    assert order == sorted(order)
    assert [f.severity for f in findings][:2] == ["error", "warning"]


def test_prefix_caching_flag_last_one_wins():
    on_again = GOOD_VLLM + ["--no-enable-prefix-caching", "--enable-prefix-caching"]
    assert "prefix-caching-off" not in ids(check(on_again, env=SEED))
    assert "prefix-caching-off" in ids(check(GOOD_VLLM + ["--enable-prefix-caching=false"], env=SEED))
    assert "prefix-caching-off" in ids(check(GOOD_VLLM + ["--enable_prefix_caching", "--no_enable_prefix_caching"], env=SEED))


def test_vllm_dotted_kv_events_config():
    argv = ["vllm", "serve", "m", "--kv-events-config.enable_kv_cache_events", "true", "--kv-events-config.publisher=zmq"]
    assert not {"kv-events-off", "kv-events-publisher-default"} & set(ids(check(argv, env=SEED)))


def test_vllm_config_file(tmp_path):
    cfg = tmp_path / "vllm.yaml"
    cfg.write_text("model: m\nblock_size: 32\nenable_prefix_caching: false\nprefix_caching_hash_algo: xxhash\n")
    findings = check(["vllm", "serve", "--config", str(cfg), "--kv-events-config", EVENTS], env={}, router_block_size=16)
    assert {"block-size-mismatch", "prefix-caching-off", "hash-algo-random-root"} <= set(ids(findings))
    # Flags override the file.
    findings = check(
        ["vllm", "serve", "--config", str(cfg), "--block-size", "16", "--kv-events-config", EVENTS], env=SEED, router_block_size=16
    )
    assert "block-size-mismatch" not in ids(findings)


def test_environment_from_the_command_line():
    assert "pythonhashseed-unset" not in ids(check(["PYTHONHASHSEED=0"] + GOOD_VLLM, env={}))
    assert "pythonhashseed-unset" not in ids(check(["env", "PYTHONHASHSEED=7"] + GOOD_VLLM, env={}))
    assert "pythonhashseed-unset" in ids(check(["env", "-u", "PYTHONHASHSEED"] + GOOD_VLLM, env=SEED))
    assert "pythonhashseed-unset" in ids(check(["env", "-i", "PATH=/bin"] + GOOD_VLLM, env=SEED))


def test_env_defaults_to_this_process(monkeypatch):
    monkeypatch.setenv("PYTHONHASHSEED", "123")
    assert "pythonhashseed-unset" not in ids(check(GOOD_VLLM))
    monkeypatch.delenv("PYTHONHASHSEED")
    assert "pythonhashseed-unset" in ids(check(GOOD_VLLM))


def test_sglang_ignores_pythonhashseed_and_needs_only_the_flag():
    findings = check(GOOD_SGLANG, env={"PYTHONHASHSEED": "random"}, router_block_size=16)
    assert findings == []
    missing = GOOD_SGLANG[:7]
    assert "kv-events-off" in ids(check(missing, env={}))
    null = GOOD_SGLANG[:8] + ['{"publisher": "null"}']
    assert "kv-events-publisher-null" in ids(check(null, env={}))


def test_trtllm_options_file(trt_options):
    good = trt_options("kv_cache_config:\n  enable_block_reuse: true\n  event_buffer_max_size: 1024\ntokens_per_block: 32\n")
    assert check(["trtllm-serve", "m", "--extra_llm_api_options", good], env={}, router_block_size=32) == []
    bad = trt_options("kv_cache_config: {enable_block_reuse: false, event_buffer_max_size: 0}\ntokens_per_block: 64\n", "bad.yaml")
    findings = check(["trtllm-serve", "m", "--extra_llm_api_options", bad], env={}, router_block_size=32)
    assert {"prefix-caching-off", "kv-events-off", "block-size-mismatch"} <= set(ids(findings))
    js = trt_options(json.dumps({"kv_cache_config": {"event_buffer_max_size": 16, "tokens_per_block": 16}}), "o.json")
    assert check(["trtllm-serve", "m", "--extra_llm_api_options", js], env={}, router_block_size=16) == []
    # No options file: no events, the default block size 32.
    findings = check(["trtllm-serve", "m"], env={}, router_block_size=16)
    assert {"kv-events-off", "block-size-mismatch"} <= set(ids(findings))
    assert "config-file-unreadable" in ids(check(["trtllm-serve", "m", "--extra_llm_api_options", "/nope.yaml"], env={}))
    # Dynamo's launcher flags.
    dyn = ["python3", "-m", "dynamo.trtllm", "--publish-events-and-metrics", "--kv-block-size", "16"]
    assert check(dyn, env={}, router_block_size=16) == []


@pytest.mark.parametrize(
    "argv, engine",
    [
        (["vllm", "serve", "m"], "vllm"),
        (["/opt/venv/bin/vllm", "serve", "m"], "vllm"),
        (["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"], "vllm"),
        (["python3.11", "-mvllm.entrypoints.api_server"], "vllm"),
        (["CUDA_VISIBLE_DEVICES=0", "env", "A=1", "python", "-m", "dynamo.vllm"], "vllm"),
        (["uv", "run", "vllm", "serve", "m"], "vllm"),
        (["python", "-m", "sglang.launch_server", "--model-path", "m"], "sglang"),
        (["sglang", "serve", "--model-path", "m"], "sglang"),
        (["python", "-m", "dynamo.sglang"], "sglang"),
        (["trtllm-serve", "m"], "trtllm"),
        (["mpirun", "-n", "1", "trtllm-serve", "m"], "trtllm"),
        (["python", "-m", "dynamo.trtllm"], "trtllm"),
        (["python", "server.py"], None),
        (["vllm", "bench"], None),
        ([], None),
    ],
)
def test_detect_engine(argv, engine):
    assert detect_engine(argv) == engine


def test_explicit_engine_overrides_detection():
    findings = check(["./launch.sh", "--page-size", "8"], env={}, engine="sglang", router_block_size=16)
    assert "engine-unknown" not in ids(findings)
    assert "block-size-mismatch" in ids(findings)


def test_check_argument_errors():
    with pytest.raises(ValueError):
        check(["vllm", "serve"], engine="tgi")
    with pytest.raises(ValueError):
        check(["vllm", "serve"], router_block_size=0)
    with pytest.raises(TypeError):
        check("vllm serve m")


def _cli(*args, env=None):
    import os

    full_env = dict(os.environ, PYTHONPATH=str(SRC))
    full_env.pop("PYTHONHASHSEED", None)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "kvhash", *args], capture_output=True, text=True, env=full_env)


def test_cli_text_output_and_exit_codes():
    bad = _cli("doctor", "--router-block-size", "16", "--", "vllm", "serve", "m", "--no-enable-prefix-caching")
    assert bad.returncode == 1
    lines = bad.stdout.strip().splitlines()
    assert lines[0].startswith("error") and any("prefix-caching-off" in line for line in lines)
    assert all("Fix:" in line for line in lines)
    good = _cli("doctor", "--router-block-size", "16", "--", *GOOD_VLLM, env=SEED)
    assert good.returncode == 0 and good.stdout.strip() == "ok: no findings"
    warn_only = _cli("doctor", "--", *GOOD_VLLM)
    assert warn_only.returncode == 0 and "pythonhashseed-unset" in warn_only.stdout


def test_cli_json_and_engine_option():
    res = _cli("doctor", "--json", "--engine", "sglang", "--router-block-size", "16", "--", "./run.sh", "--page-size", "4")
    assert res.returncode == 1
    data = json.loads(res.stdout)
    assert isinstance(data, list)
    assert all(set(d) == {"id", "severity", "message", "fix"} for d in data)
    assert "block-size-mismatch" in {d["id"] for d in data}
    empty = _cli("doctor", "--json", "--router-block-size", "16", "--", *GOOD_VLLM, env=SEED)
    assert empty.returncode == 0 and json.loads(empty.stdout) == []


def test_cli_usage_errors():
    assert _cli("doctor").returncode == 2
    assert _cli("doctor", "--router-block-size", "0", "--", "vllm", "serve").returncode == 2
    assert _cli("doctor", "--engine", "tgi", "--", "x").returncode == 2
    assert _cli().returncode == 2
    version = _cli("version")
    assert version.returncode == 0 and "spec v1" in version.stdout
