"""The SGLang plugin as SGLang 0.5.23 runs it: found by load_plugins(), filtered by
SGLANG_PLUGINS, idempotent, undoable, and safe when anything around it is broken."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.sglang_env import import_sglang
from helpers.sglang_rig import run_python, sglang_plugin

from radix_evict import registry
from radix_evict.sglang import native, plugin

__all__ = ["sglang_plugin"]  # the fixture, imported for this module's tests

LOAD_AND_REPORT = """
    import json, logging, sys
    from helpers.sglang_env import import_sglang
    import_sglang()
    logging.basicConfig(level=logging.INFO)
    from sglang.srt.arg_groups.choices import RADIX_EVICTION_POLICY_CHOICES as choices
    before = list(choices)
    import radix_evict.sglang.plugin  # importing it changes nothing
    assert choices == before, choices
    from sglang.srt.plugins import load_plugins
    load_plugins()
    strategies_imported = "sglang.srt.mem_cache.utils" in sys.modules
    from sglang.srt.mem_cache import utils
    try:
        s = utils.get_eviction_strategy("gdsf", {"credit": 4.0})
        strategy = [type(s).__name__, repr(s.policy)]
    except ValueError as e:
        strategy = ["ValueError", str(e)]
    print("REPORT " + json.dumps({
        "choices": choices,
        "strategies_imported_by_plugin": strategies_imported,
        "strategy": strategy,
        "lru_factory": getattr(utils._EVICTION_POLICY_FACTORIES["lru"], "__name__", "?"),
        "radix_evict_choices": __import__("radix_evict").registry.choices(),
    }))
"""


def _report(out: str) -> dict[str, Any]:
    line = next(x for x in out.splitlines() if x.startswith("REPORT "))
    return json.loads(line[len("REPORT ") :])  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def env_ready() -> None:
    import_sglang()  # skips the module's tests when the environment is missing


def test_load_plugins_finds_the_entry_point_and_adds_gdsf(env_ready: None, tmp_path: Path) -> None:
    out = run_python(LOAD_AND_REPORT, tmp_path, {"SGLANG_PLUGINS": "", "RADIX_EVICT_PLUGINS": ""})
    # RADIX_EVICT_PLUGINS="" allows no third-party radix-evict package: only built-ins.
    rep = _report(out)
    assert rep["choices"] == list(native.NATIVE_CHOICES)
    assert rep["strategy"][0] == "ValueError"
    assert "Unknown eviction policy: gdsf" in rep["strategy"][1]
    assert rep["lru_factory"] == "validated_lru"  # the eight are still validated

    out = run_python(LOAD_AND_REPORT, tmp_path, {"SGLANG_PLUGINS": ""})
    rep = _report(out)
    assert "Loaded plugin radix_evict from group sglang.srt.plugins" in out
    # the example package adds gdsf (and more) and radix-evict's hidden fifo to the choices
    offered = rep["radix_evict_choices"]
    assert {"gdsf", "fifo"} <= set(offered)
    assert rep["choices"] == [
        *native.NATIVE_CHOICES, *(n for n in offered if n not in native.NATIVE_CHOICES)]
    assert rep["strategy"] == ["BridgedStrategy", "GreedyDualPolicy(credit=4.0, "
                               "attention_span=8192, frequency=True)"]
    assert rep["strategies_imported_by_plugin"] is False  # the heavy module stays lazy
    assert "radix-evict: SGLang now accepts --radix-eviction-policy" in out


def test_sglang_plugins_excluding_it_changes_nothing(env_ready: None, tmp_path: Path) -> None:
    out = run_python(LOAD_AND_REPORT, tmp_path, {"SGLANG_PLUGINS": "someone_else"})
    rep = _report(out)
    assert "Skipping plugin radix_evict (not in SGLANG_PLUGINS)" in out
    assert rep["choices"] == list(native.NATIVE_CHOICES)
    assert rep["strategy"][0] == "ValueError"
    assert "Unknown eviction policy: gdsf" in rep["strategy"][1]
    assert rep["lru_factory"] == "LRUStrategy"



def _fake_dist(site: Path, dist: str, group: str, ep: str, module: str, source: str) -> None:
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{ep} = {module}\n")
    (site / f"{module.split(':')[0]}.py").write_text(source)


def test_a_broken_policy_package_stops_neither_sglang_nor_other_plugins(
    env_ready: None, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    _fake_dist(site, "broken-policies", "radix_evict.policies", "broken", "broken_policies",
               "raise RuntimeError('this policy package is broken')\n")
    _fake_dist(site, "other-sglang-plugin", native.PLUGIN_GROUP, "zz_other", "zz_other:run",
               "import os\ndef run():\n    os.environ['OTHER_PLUGIN_RAN'] = '1'\n")
    code = """
        import os, sys
        sys.path.insert(0, SITE)
        from helpers.sglang_env import import_sglang
        import_sglang()
        import logging; logging.basicConfig(level=logging.INFO)
        from sglang.srt.plugins import load_plugins
        load_plugins()
        assert os.environ.get("OTHER_PLUGIN_RAN") == "1", "the other SGLang plugin did not run"
        from helpers.sglang_rig import PoolAllocator, build_sglang_cache
        for policy in ("lru", "gdsf"):
            build_sglang_cache("unified-py", PoolAllocator(64), policy)
        print("STARTED")
    """.replace("SITE", repr(str(site)))
    out = run_python(code, tmp_path, {"SGLANG_PLUGINS": ""})
    assert "STARTED" in out
    assert "a policy package failed to load" in out and "broken-policies" in out


def test_radix_evict_imports_and_works_without_sglang(tmp_path: Path) -> None:
    out = run_python(
        """
        import sys
        import radix_evict.sglang.plugin as plugin, radix_evict.sglang.check
        from radix_evict import KVPool, RadixCache
        cache = RadixCache(KVPool(size=8, device="cpu"), policy="lru")
        cache.match_prefix([1, 2])
        plugin.register()  # SGLang is missing: logs, raises nothing, changes nothing
        assert plugin.installed() is None
        assert not [m for m in sys.modules if m.split(".")[0] == "sglang"], "imported SGLang"
        print("OK")
        """,
        tmp_path,
    )
    assert "OK" in out


def _sglang_state() -> tuple[dict[str, Any], list[str], Any, Any]:
    from sglang.srt.arg_groups import choices
    from sglang.srt.mem_cache import utils
    from sglang.srt.mem_cache.unified_cache import tree_core_registry, unified_tree_core

    return (
        dict(utils._EVICTION_POLICY_FACTORIES),
        list(choices.RADIX_EVICTION_POLICY_CHOICES),
        tree_core_registry._rust_fallback_reason,
        unified_tree_core.UnifiedTreeCore.__init__,
    )


def test_register_is_idempotent_and_uninstall_restores_sglang(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import_sglang()
    before = _sglang_state()
    monkeypatch.delenv("RADIX_EVICT_PLUGINS", raising=False)
    registry.reload()
    try:
        plugin.register()
        once = _sglang_state()
        plugin.register()
        assert _sglang_state() == once
        factories, choices, _, _ = once
        assert len(choices) == len(set(choices))
        # every name on radix-evict's choice list (the example's gdsf among them), no more
        offered = registry.choices()
        assert "gdsf" in offered
        assert set(factories) == {*native.NATIVE_POLICIES, *offered}
        assert choices == [*native.NATIVE_CHOICES,
                           *(n for n in offered if n not in native.NATIVE_CHOICES)]
        assert once != before
    finally:
        plugin.uninstall()
        registry.reload()
    assert _sglang_state() == before


def test_the_entry_point_is_declared_in_radix_evicts_own_metadata() -> None:
    from importlib.metadata import distribution

    [ep] = [e for e in distribution("radix-evict").entry_points if e.group == native.PLUGIN_GROUP]
    assert (ep.name, ep.value) == (native.ENTRY_POINT, "radix_evict.sglang.plugin:register")
    assert ep.load() is plugin.register


def test_the_plugin_never_raises_into_sglang(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import_sglang()

    def broken(reg: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(plugin, "_install", broken)
    plugin.uninstall()
    plugin.register()
    assert plugin.installed() is None
    assert "SGLang runs without radix-evict's policies" in caplog.text
    assert "sglang" in sys.modules  # (the environment really was loaded)
