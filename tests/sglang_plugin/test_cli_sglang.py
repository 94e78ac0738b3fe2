"""``radix-evict sglang check`` against SGLang 0.5.23's own code (and without SGLang)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.sglang_env import import_sglang
from typer.testing import CliRunner

from radix_evict import registry
from radix_evict.cli import app
from radix_evict.sglang import native, plugin


@pytest.fixture
def check(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Runs the command in-process; SGLang's registries are put back afterwards."""
    import_sglang()
    monkeypatch.delenv("RADIX_EVICT_PLUGINS", raising=False)
    monkeypatch.delenv("SGLANG_PLUGINS", raising=False)
    monkeypatch.delenv("SGLANG_UNIFIED_RADIX_TREE_CORE_BACKEND", raising=False)
    plugin.uninstall()
    registry.reload()

    def run(*args: str) -> Any:
        return CliRunner().invoke(app, ["sglang", "check", *args])

    yield run
    plugin.uninstall()
    registry.reload()


def test_reports_version_plugin_and_accepted_names(check: Any) -> None:
    r = check()
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0] == f"SGLang: {native.SUPPORTED_VERSION}"
    assert "plugin: declared, radix_evict = radix_evict.sglang.plugin:register" in r.stdout
    assert "SGLANG_PLUGINS: unset (every plugin loads) -> allowed" in r.stdout
    offered = registry.choices()  # the example's gdsf and fifo, and whatever else is installed
    assert {"gdsf", "fifo"} <= set(offered)
    added = ", ".join(n for n in offered if n not in native.NATIVE_POLICIES)
    assert f"added policies: {added};" in r.stdout
    accepts = [*native.NATIVE_CHOICES, *(n for n in offered if n not in native.NATIVE_CHOICES)]
    assert lines[-1] == f"--radix-eviction-policy accepts: {', '.join(accepts)}"


def test_a_radix_evict_policy_reports_the_python_core_and_why(check: Any) -> None:
    r = check("--radix-eviction-policy", "gdsf", "--radix-eviction-policy-config",
              '{"credit": 4}', "--json")
    assert r.exit_code == 0, r.output
    setting = json.loads(r.stdout)["setting"]
    assert setting["ok"] and setting["tree_core"] == "python"
    assert "comes from radix-evict" in setting["tree_core_reason"]
    assert setting["strategy"].startswith("BridgedStrategy(GreedyDualPolicy(credit=4.0")


def test_sglangs_own_policy_keeps_sglangs_core(check: Any) -> None:
    from sglang.srt.mem_cache.unified_cache import tree_core_registry as reg

    r = check("--radix-eviction-policy", "slru", "--radix-eviction-policy-config",
              '{"protected_threshold": 0}', "--json")
    assert r.exit_code == 0, r.output
    setting = json.loads(r.stdout)["setting"]
    assert setting["strategy"] == "SLRUStrategy"
    # whatever SGLang itself decides on this machine (rust where its extension loads)
    assert setting["tree_core"] in ("rust", "python")
    assert setting["tree_core_reason"] is None or "radix-evict" not in setting["tree_core_reason"]
    assert reg._rust_fallback_reason.__wrapped__  # the check ran the plugin's routing


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["slru", '{"protected_treshold": 3}'], "did you mean 'protected_threshold'"),
        (["tlru", '{"threshold": 4, "next_prompt_estimate": 6}'], "greater than next_prompt"),
        (["nope", None], "invalid choice: 'nope' (choose from 'lru', 'lfu'"),
        (["lru", "[1]"], "must be a JSON object"),
        (["lru", "{"], "is not JSON"),
    ],
)
def test_a_setting_sglang_would_refuse_exits_1_with_the_startup_error(
    check: Any, args: list[str | None], needle: str
) -> None:
    policy, config = args
    argv = ["--radix-eviction-policy", str(policy)]
    if config is not None:
        argv += ["--radix-eviction-policy-config", config]
    r = check(*argv)
    assert r.exit_code == 1, r.output
    assert needle in r.output


def test_excluded_by_sglang_plugins_says_so(check: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SGLANG_PLUGINS", "someone_else")
    r = check("--json")
    assert r.exit_code == 1
    rep = json.loads(r.stdout)
    assert rep["plugin_allowed"] is False and rep["plugin_active"] is False
    assert rep["accepted_policies"] == list(native.NATIVE_CHOICES)
    r = check("--radix-eviction-policy", "gdsf")
    assert r.exit_code == 1 and "invalid choice: 'gdsf'" in r.stdout
    assert "EXCLUDED: add radix_evict to SGLANG_PLUGINS" in r.stdout


def test_without_sglang_exits_2(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("radix-evict")
    r = subprocess.run([str(exe), "sglang", "check"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "SGLang: not importable here" in r.stdout


# ------------------------------------------------------------ --radix-eviction-policy-config @FILE


def test_config_file_is_read(check: Any, tmp_path: Path) -> None:
    cfg = tmp_path / "slru.json"
    cfg.write_text('{"protected_threshold": 3}')
    r = check("--radix-eviction-policy", "slru", "--radix-eviction-policy-config", f"@{cfg}",
              "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["setting"]["config"] == {"protected_threshold": 3}


def test_deeply_nested_config_file_is_refused_cleanly(check: Any, tmp_path: Path) -> None:
    deep = tmp_path / "deep.cfg"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    r = check("--radix-eviction-policy", "lru", "--radix-eviction-policy-config", f"@{deep}")
    assert r.exit_code == 1, r.output
    assert "internal error" not in r.output and "RecursionError" not in r.output
    assert f"--radix-eviction-policy-config @{deep}: nested 100000 levels deep" in r.output


def test_a_long_number_is_refused_cleanly(check: Any) -> None:
    r = check("--radix-eviction-policy", "slru", "--radix-eviction-policy-config",
              '{"protected_threshold": ' + "9" * 5000 + "}")
    assert r.exit_code == 1, r.output
    assert "internal error" not in r.output and "5000 digits" in r.output


@pytest.mark.parametrize("target", ["/dev/zero", "fifo", "missing.json"])
def test_config_file_that_is_no_readable_file_is_a_usage_error(check: Any, tmp_path: Path,
                                                               target: str) -> None:
    import os

    if target == "fifo":
        os.mkfifo(tmp_path / "fifo")  # opened for reading, it would block: never opened so
    path = target if target.startswith("/") else str(tmp_path / target)
    r = check("--radix-eviction-policy", "lru", "--radix-eviction-policy-config", f"@{path}")
    assert r.exit_code == 2, r.output
    assert f"--radix-eviction-policy-config @{path}: {path}: " in r.output
    assert ("not a regular file" in r.output) != (target == "missing.json")


def test_config_file_not_utf8_is_a_bad_config(check: Any, tmp_path: Path) -> None:
    bad = tmp_path / "latin1.json"
    bad.write_bytes(b'{"k": "caf\xe9"}')
    r = check("--radix-eviction-policy", "lru", "--radix-eviction-policy-config", f"@{bad}")
    assert r.exit_code == 1 and "not UTF-8" in r.output, r.output


def test_config_file_too_large(check: Any, tmp_path: Path) -> None:
    from radix_evict.inputs import CONFIG_BYTES

    big = tmp_path / "big.json"
    big.write_text('{"k": "' + "x" * CONFIG_BYTES + '"}')
    r = check("--radix-eviction-policy", "lru", "--radix-eviction-policy-config", f"@{big}")
    assert r.exit_code == 2 and "MiB limit" in r.output, r.output


# ------------------------------------------------------------------ SGLang's own startup checks


def test_startup_checks_beyond_the_strategy_are_reported(check: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the plugin, SGLang builds TLRUStrategy() but its server-argument check refuses
    tlru without a threshold: the check said OK before it asked the shared startup rules."""
    monkeypatch.setenv("SGLANG_PLUGINS", "someone_else")
    r = check("--radix-eviction-policy", "tlru", "--json")
    assert r.exit_code == 1, r.output
    setting = json.loads(r.stdout)["setting"]
    assert not setting["ok"] and "threshold must be greater than next_prompt_estimate" in (
        setting["error"])
    assert [p["type"] for p in setting["problems"]] == ["value_error"]


# ------------------------------------------------------------------ HiCache (the host tier)


def test_hicache_reports_what_sglang_runs(check: Any) -> None:
    """SGLang's own hooks rewrite the layout for the direct io backend: the check says so,
    in SGLang's words too, with the write policy's meaning and the host pool's rule."""
    r = check("--enable-hicache", "--hicache-io-backend", "direct", "--hicache-write-policy",
              "write_back", "--json")
    assert r.exit_code == 0, r.output
    h = json.loads(r.stdout)["hicache"]
    assert h["ok"] and h["enabled"] and h["error"] is None
    assert (h["write_policy"], h["io_backend"], h["mem_layout"], h["host_memory_mode"]) == (
        "write_back", "direct", "page_first_direct", "cache")
    assert h["write_policy_means"].startswith("a node is copied to host memory only when")
    assert h["rewrites"] == ["--hicache-mem-layout page_first -> page_first_direct"]
    assert any("switching to page first direct layout" in x for x in h["sglang_log"])
    assert h["host_size"].startswith("2.0 x the device pool's tokens per rank")
    assert "reduced at startup until all ranks' host pools fit in 0.8" in h["host_size"]
    text = check("--enable-hicache", "--hicache-io-backend", "direct").stdout.splitlines()
    assert "HiCache: on, host memory mode cache, storage backend none" in text
    assert "HiCache io backend: direct, host memory layout: page_first_direct" in text
    assert "HiCache: SGLang rewrites --hicache-mem-layout page_first -> page_first_direct" in text
    assert any(x.startswith("HiCache write policy: write_through (") for x in text)


@pytest.mark.parametrize(("args", "needle"), [
    (["--hicache-write-policy", "wb"],
     "argument --hicache-write-policy: invalid choice: 'wb' (choose from 'write_back'"),
    (["--hicache-size", "1.5"], "argument --hicache-size: invalid int value: '1.5'"),
    (["--hicache-host-memory-mode", "buffer_only"],
     "ValueError: --hicache-host-memory-mode buffer_only requires a storage backend"),
    (["--hicache-host-memory-fraction", "0"],
     "ValueError: --hicache-host-memory-fraction must be in (0, 1]."),
    (["--hicache-ratio", "-1"], "--hicache-ratio: -1.0 cannot size a host pool"),
])
def test_hicache_sglang_would_refuse_exits_1(check: Any, args: list[str], needle: str) -> None:
    r = check("--enable-hierarchical-cache", *args)
    assert r.exit_code == 1, r.output
    assert "HiCache: SGLang would refuse to start:" in r.stdout and needle in r.stdout, r.stdout


def test_hicache_host_pool_rule_and_what_sglang_ignores(check: Any) -> None:
    r = check("--enable-hicache", "--hicache-size", "64", "--hicache-ratio", "3", "--json")
    assert r.exit_code == 0, r.output
    h = json.loads(r.stdout)["hicache"]
    assert h["host_size"].startswith("fixed: 64 GB (10^9 bytes) of host memory per rank")
    assert h["warnings"] == ["SGLang ignores --hicache-ratio: --hicache-size 64 sets the host "
                             "pool's size (pool_host/base.py:221)"]
    r = check("--enable-hicache", "--hicache-host-memory-mode", "buffer_only",
              "--hicache-storage-backend", "file", "--hicache-write-policy", "write_back",
              "--json")
    h = json.loads(r.stdout)["hicache"]
    assert h["write_policy"] == "write_through" and h["host_size"].startswith("1.2 x")
    assert h["rewrites"] == ["--hicache-write-policy write_back -> write_through"]
    r = check("--hicache-ratio", "3")
    assert r.exit_code == 0, r.output
    assert "HiCache: off (no --enable-hierarchical-cache)" in r.stdout
    assert "HiCache: warning: SGLang ignores --hicache-ratio: HiCache is off" in r.stdout


@pytest.mark.parametrize("args", [
    ["--enable-hicache"], ["--enable-hicache", "--hicache-ratio", "0.5"],
    ["--enable-hicache", "--hicache-ratio", "-2"],
    ["--enable-hicache", "--hicache-mem-layout", "page_first_direct"],
    ["--enable-hicache", "--hicache-io-backend", "dma"],
    ["--enable-hicache", "--hicache-host-memory-mode", "buffer_only"],
    ["--hicache-host-memory-fraction", "2"], ["--hicache-write-policy", "write_back"],
])
def test_hicache_check_and_lint_agree(check: Any, args: list[str]) -> None:
    """The check (SGLang's hooks) and lint (radix-evict's statement of them) refuse the same."""
    from radix_evict.lint import lint_text

    report = lint_text("python -m sglang.launch_server --model-path m " + " ".join(args),
                       "serve.sh")
    assert (check(*args).exit_code == 1) == (not report.ok), report.problems
