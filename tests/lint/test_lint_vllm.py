"""``radix-evict lint`` on vLLM launch configs: vLLM 0.33.0's verdict on the CPU offload policy.

The corpus (``lint_corpus/vllm``) is checked two ways: by lint, and by vLLM's own code
(``radix_evict.vllm.check``: its policy factory and ``CPUOffloadingSpec.get_manager``, the
vLLM test environment, ``make vllm-env``). And the guards: a vLLM launch without the
offload connector is not flagged; SGLang files give the findings they gave before vLLM
launches were read; lint imports no vLLM.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from helpers.vllm_env import import_vllm

from radix_evict.lint import lint_paths, lint_text
from radix_evict.lint.engine import invocations_of
from radix_evict.lint.model import Invocation

CORPUS = Path(__file__).resolve().parent / "lint_corpus"
VLLM_FILES = sorted((CORPUS / "vllm").glob("*/*"))
SGLANG_FILES = sorted(p for d in ("valid", "invalid", "stricter") for p in (CORPUS / d).iterdir())
pytestmark = pytest.mark.usefixtures("only_builtin_plugins")

OFFLOAD = {"kv_connector": "OffloadingConnector", "kv_role": "kv_both"}


@pytest.fixture(scope="module")
def vllm() -> types.ModuleType:
    """vLLM 0.33.0's offload modules (skips where ``make vllm-env`` has not built them)."""
    return import_vllm()


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def errors(report: Any) -> list[str]:
    return [str(p) for p in report.problems if report.failing(p)]


@pytest.mark.parametrize("path", VLLM_FILES, ids=_id)
def test_lint_verdict(path: Path) -> None:
    report = lint_paths([path])
    assert bool(errors(report)) == (path.parent.name == "invalid"), errors(report) or "no error"
    assert all(p.line is not None and p.column is not None for p in report.problems)
    assert invocations_of(path, "vllm"), "lint found no vLLM launch"
    assert not invocations_of(path), "a vLLM launch read as SGLang's"


def kv_transfer_config(inv: Invocation) -> str:
    """The last ``--kv-transfer-config`` value, read here independently of lint's reader."""
    found = None
    args = [a.text for a in inv.args]
    for i, a in enumerate(args):
        name, eq, value = a.partition("=")
        if re.fullmatch(r"--kv[-_]transfer[-_]config", name):
            found = value if eq else args[i + 1]
    assert found is not None
    return found


def vllm_refuses(text: str) -> str | None:
    """What vLLM 0.33.0's own code says of this --kv-transfer-config (None: it runs)."""
    from radix_evict.vllm.check import check

    try:
        kv = json.loads(text)  # vLLM's argument parser
    except json.JSONDecodeError as e:
        return f"argument parser: {e}"
    if kv.get("kv_connector") != OFFLOAD["kv_connector"]:
        return None  # no CPU tier: nothing builds a cache policy
    report = check(kv)
    return None if report.ok else report.error


@pytest.mark.parametrize("path", VLLM_FILES, ids=_id)
def test_vllm_agrees(vllm: types.ModuleType, path: Path) -> None:
    refusals = [r for inv in invocations_of(path, "vllm")
                if (r := vllm_refuses(kv_transfer_config(inv))) is not None]
    assert bool(refusals) == (path.parent.name == "invalid"), refusals or "vLLM runs it"
    assert bool(refusals) == (not lint_paths([path]).ok), refusals


def launch(extra: dict[str, Any] | None = None, **kv: Any) -> str:
    cfg = {**OFFLOAD, **kv}
    if extra is not None:
        cfg["kv_connector_extra_config"] = {"cpu_bytes_to_use": 1 << 30, **extra}
    return f"#!/bin/sh\nexec vllm serve m --kv-transfer-config '{json.dumps(cfg)}'\n"


@pytest.mark.parametrize("text", [
    "vllm serve m --max-model-len 4096\n",
    "vllm serve m --kv-transfer-config '{\"kv_connector\": \"NixlConnector\", "
    "\"kv_role\": \"kv_both\"}'\n",
    # another connector ignores the offload keys: vLLM builds no cache policy
    launch({"eviction_policy": "gdsf", "cache_policy_module_path": "nowhere"},
           kv_connector="LMCacheConnectorV1"),
    "vllm serve m --kv-offloading-size 8 --kv-offloading-backend lmcache "
    "--kv-transfer-config '{\"kv_connector_extra_config\": {\"eviction_policy\": \"x\"}}'\n",
    "python -m vllm.entrypoints.openai.api_server --model m --config vllm.yaml\n",
], ids=["no-kv-transfer", "nixl", "lmcache-with-offload-keys", "lmcache-backend", "config"])
def test_without_the_offload_connector_nothing_is_flagged(text: str) -> None:
    assert lint_text(text, "serve.sh").problems == []


@pytest.mark.parametrize("extra", [
    {},
    {"eviction_policy": "arc"},
    {"eviction_policy": "radix_evict_lru", "cache_policy_module_path": "radix_evict.vllm"},
    {"eviction_policy": "radix_evict_slru", "cache_policy_module_path": "radix_evict.vllm",
     "radix_eviction_config": {"protected_threshold": 4}},
    {"eviction_policy": "radix_evict_tlru", "cache_policy_module_path": "radix_evict.vllm",
     "radix_eviction_config": '{"threshold": 9}'},
    {"eviction_policy": "MyPolicy", "cache_policy_module_path": "json.decoder"},
])
def test_a_good_offload_setting_is_not_flagged(extra: dict[str, Any]) -> None:
    assert lint_text(launch(extra), "serve.sh").problems == []


@pytest.mark.parametrize(("extra", "type_", "said"), [
    ({"eviction_policy": "slru"}, "unknown_policy",
     "Unknown cache policy: 'slru'. Supported: ['lru', 'arc']"),
    ({"eviction_policy": "radix_evict_slru"}, "unknown_policy",
     "radix-evict's classes need cache_policy_module_path 'radix_evict.vllm'"),
    ({"eviction_policy": "radix_evict_slruu", "cache_policy_module_path": "radix_evict.vllm"},
     "unknown_policy", "did you mean 'slru'?"),
    ({"eviction_policy": "radix_evict_slru", "cache_policy_module_path": "radix_evict.vllm",
      "radix_eviction_config": {"protected_threshold": "x"}}, "int_type", "protected_threshold"),
    ({"eviction_policy": "radix_evict_slru", "cache_policy_module_path": "radix_evict.vllm",
      "radix_eviction_cofig": {}}, "extra_forbidden", "did you mean 'radix_eviction_config'?"),
    ({"eviction_policy": "radix_evict_slru", "cache_policy_module_path": "radix_evict.vllm",
      "radix_eviction_config": [3]}, "config_type", "must be a JSON object"),
    ({"eviction_policy": 3}, "policy_type", "eviction_policy must be a string"),
])
def test_what_vllm_refuses(extra: dict[str, Any], type_: str, said: str) -> None:
    report = lint_text(launch(extra), "serve.sh")
    found = [p for p in report.problems if p.type == type_]
    assert found and report.failing(found[0]), report.problems
    assert said in f"{found[0].msg} {found[0].hint}"


def test_the_same_verdict_as_vllm_check(vllm: types.ModuleType) -> None:
    """Lint's message is the one vLLM's own factory gives (``vllm check`` reports it)."""
    from radix_evict.vllm.check import check

    for extra in ({"eviction_policy": "slru"},
                  {"eviction_policy": "slru", "cache_policy_module_path": "radix_evict.vllm"}):
        (p,) = lint_text(launch(extra), "serve.sh").problems
        real = check({**OFFLOAD, "kv_connector_extra_config": {"cpu_bytes_to_use": 1, **extra}})
        assert real.error is not None and real.error.split(": ", 1)[1] in p.msg


def test_the_last_flag_wins_and_each_is_parsed() -> None:
    text = ("vllm serve m --kv-transfer-config '{bad' \\\n  --kv_transfer_config="
            + json.dumps(json.dumps({**OFFLOAD, "kv_connector_extra_config": {
                "cpu_bytes_to_use": 1}}))[1:-1].replace("\\", "") + "\n")
    types_ = {p.type for p in lint_text(text, "serve.sh").problems}
    assert types_ == {"json_invalid", "overridden"}
    ok = launch({"eviction_policy": "arc"}).replace("vllm serve m ", "vllm serve m "
                                                    "--kv-transfer-config '{}' ")
    (p,) = lint_text(ok, "serve.sh").problems
    assert p.type == "overridden" and p.severity == "warning" and p.line == 2


def test_offloading_size_makes_the_offload_connector() -> None:
    text = ("vllm serve m --kv-offloading-size 8 --kv-transfer-config "
            "'{\"kv_connector_extra_config\": {\"eviction_policy\": \"slru\"}}'\n")
    (p,) = lint_text(text, "serve.sh").problems
    assert p.type == "unknown_policy" and (p.line, p.column) == (1, text.index('"slru"') + 1)


def test_other_launchers_and_shapes() -> None:
    cfg = json.dumps({**OFFLOAD, "kv_connector_extra_config": {
        "cpu_bytes_to_use": 1, "eviction_policy": "slru"}})
    cases = {
        "a.sh": f"python -m vllm.entrypoints.cli.main serve m --kv-transfer-config '{cfg}'\n",
        "b.json": json.dumps({"args": ["--kv-transfer-config", cfg]}),
        "c.yaml": "vllm:\n  kv_transfer_config: '" + cfg + "'\n",
    }
    for name, text in cases.items():
        (p,) = lint_text(text, name).problems
        assert p.type == "unknown_policy", (name, p)


def _old_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    """lint as it read files before vLLM launches: SGLang's mentions only."""
    from radix_evict.lint import engine
    from radix_evict.lint.readers import sources

    monkeypatch.setattr(engine, "RELEVANT", re.compile(r"radix|--conf|hicache|--hi|enable[-_]hi",
                                                       re.IGNORECASE))
    monkeypatch.setattr(sources, "MENTION", re.compile(r"--(?:radix|conf|hi|enable[-_]hi)",
                                                       re.IGNORECASE))
    monkeypatch.setattr(sources, "VLLM_KV_KEY", "\0")
    monkeypatch.setattr(sources, "is_vllm_launcher", lambda name: False)


def test_sglang_files_give_the_same_findings(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [str(p) for p in lint_paths(SGLANG_FILES).problems]
    assert now
    with monkeypatch.context() as m:
        _old_reading(m)
        before = [str(p) for p in lint_paths(SGLANG_FILES).problems]
    assert now == before
    assert not [p for p in SGLANG_FILES if invocations_of(p, "vllm")]


def test_lint_imports_no_vllm() -> None:
    probe = ("import sys\nfrom radix_evict.lint import lint_text\n"
             f"r = lint_text({launch({'eviction_policy': 'radix_evict_lru'})!r}, 's.sh')\n"
             "r2 = lint_text(" + repr(launch({"eviction_policy": "radix_evict_lru",
                                              "cache_policy_module_path": "radix_evict.vllm"}))
             + ", 's.sh')\n"
             "assert [p.type for p in r.problems] == ['unknown_policy'] and not r2.problems\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] == 'vllm'"
             " or m.startswith('radix_evict.vllm.') and m.rsplit('.', 1)[1] in "
             "('cache_policy', 'policy', 'tree', 'launch')))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_vllms_facts_are_vllms(vllm: types.ModuleType) -> None:
    """The names lint says vLLM registers, and its words for an unknown one, are vLLM's."""
    import importlib

    from radix_evict.vllm import names

    factory = importlib.import_module(names.FACTORY_MODULE).CachePolicyFactory
    assert tuple(factory._registry) == names.VLLM_POLICIES
    with pytest.raises(ValueError) as e:
        factory.get_cache_policy_cls("radix_evict_lru")
    assert str(e.value) == names.unknown_policy_message("radix_evict_lru")
