"""``radix-evict vllm check`` against vLLM 0.33.0's real factory and spec (in-process)."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest
from helpers.rigs import run_cli

OURS = ["--cache-policy-module-path", "radix_evict.vllm"]


def check(*args: str) -> tuple[int, str]:
    r = run_cli("vllm", "check", *args)
    return r.exit_code, r.stdout


def check_json(*args: str) -> tuple[int, dict]:
    code, out = check(*args, "--json")
    return code, json.loads(out)


def test_a_good_setting_says_what_runs(vllm: types.ModuleType) -> None:
    code, data = check_json("--eviction-policy", "radix_evict_gdsf", *OURS,
                            "--radix-eviction-config", '{"credit": 4}')
    assert code == 0 and data["status"] == "ok" and data["vllm_version"] == "0.33.0"
    assert "'gdsf'" in data["runs"] and "'credit': 4.0" in data["runs"]
    assert data["vllm_policies"] == ["lru", "arc"]
    assert "radix_evict_reuse" in data["radix_evict_policies"]
    assert "CPUOffloadingSpec.get_manager" in data["built_with"]


def test_a_bad_config_gets_radix_evicts_messages(vllm: types.ModuleType) -> None:
    code, data = check_json("--eviction-policy", "radix_evict_gdsf", *OURS,
                            "--radix-eviction-config", '{"credit": -4, "bogus": 1}')
    assert code == 1 and data["status"] == "problem"
    assert {p["key"] for p in data["problems"]} == {"credit", "bogus"}
    assert "unknown key; valid keys: credit" in data["error"]


@pytest.mark.parametrize(("args", "said"), [
    (["--eviction-policy", "radix_evict_gdsf"], "Unknown cache policy: 'radix_evict_gdsf'"),
    (["--eviction-policy", "gdsf", *OURS], "did you mean 'radix_evict_gdsf'?"),
    (["--eviction-policy", "radix_evict_gdsff", *OURS], "did you mean 'gdsf'?"),
    (["--eviction-policy", "radix_evict_gdsf", "--cache-policy-module-path", "no.such.mod"],
     "cache_policy_module_path 'no.such.mod' does not import here"),
])
def test_what_vllm_would_refuse(vllm: types.ModuleType, args: list[str], said: str) -> None:
    code, out = check(*args)
    assert code == 1 and "vLLM would fail to start" in out
    assert said in " ".join(out.split())  # the terminal wraps long lines anywhere


def test_vllms_own_name_wins_and_the_config_is_ignored(vllm: types.ModuleType) -> None:
    code, data = check_json("--eviction-policy", "lru", *OURS, "--radix-eviction-config", "{}")
    assert code == 0 and data["runs"].endswith("LRUCachePolicy")
    assert any("radix_evict_lru" in n for n in data["notes"])
    assert any("ignored" in n for n in data["notes"])


def test_a_whole_kv_transfer_config_from_a_file(vllm: types.ModuleType, tmp_path: Path) -> None:
    cfg = {"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
           "kv_connector_extra_config": {"cpu_bytes_to_use": 1 << 30,
                                         "eviction_policy": "radix_evict_reuse",
                                         "cache_policy_module_path": "radix_evict.vllm",
                                         "radix_eviction_config": {"credit": 7}}}
    path = tmp_path / "kv.json"
    path.write_text(json.dumps(cfg))
    code, data = check_json("--kv-transfer-config", f"@{path}")
    assert code == 0 and "'credit': 7" in data["runs"]
    code, data = check_json("--kv-transfer-config", f"@{path}",
                            "--radix-eviction-config", '{"credit": "x"}')
    assert code == 1 and data["problems"][0]["key"] == "credit"  # the flag overrides the file


def test_a_kv_transfer_config_vllm_would_refuse(vllm: types.ModuleType) -> None:
    no_size = json.dumps({"kv_connector": "OffloadingConnector",
                          "kv_connector_extra_config": {"eviction_policy": "radix_evict_lru"}})
    code, out = check("--kv-transfer-config", no_size)
    assert code == 1 and "cpu_bytes_to_use must be specified" in out
    other = json.dumps({"kv_connector": "NixlConnector"})
    code, out = check("--kv-transfer-config", other)
    assert code == 1 and "only 'OffloadingConnector'" in out


@pytest.mark.parametrize(("args", "code"), [
    (["--kv-transfer-config", "{nope"], 1),
    (["--kv-transfer-config", "[1]"], 1),
    (["--radix-eviction-config", "@/nonexistent/config.json"], 2),
])
def test_bad_input_is_refused_before_vllm_is_asked(vllm: types.ModuleType, args: list[str],
                                                   code: int) -> None:
    r = run_cli("vllm", "check", *args)
    assert r.exit_code == code and r.stdout == ""


def test_without_vllms_spec_the_manager_is_built_directly(
    vllm: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where vLLM's spec module does not import (its GPU worker, say), the check still builds
    the policy through vLLM's manager, and the policy still finds its launch config."""
    from radix_evict.vllm import names

    monkeypatch.setattr(names, "SPEC_MODULE", "no_such_vllm_spec")
    code, data = check_json("--eviction-policy", "radix_evict_gdsf", *OURS,
                            "--radix-eviction-config", '{"credit": 2.5}')
    assert code == 0 and "'credit': 2.5" in data["runs"]
    assert data["built_with"].startswith("CPUOffloadingManager (vLLM's CPUOffloadingSpec")
    code, data = check_json("--eviction-policy", "radix_evict_gdsf", *OURS,
                            "--radix-eviction-config", '{"credit": -1}')
    assert code == 1 and data["problems"][0]["key"] == "credit"
