"""Config derivers on the policy spec, and one validation per config on the way to the cache."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from helpers.rigs import run_cli
from pydantic import Field

import radix_evict.policies.config as config_mod
from radix_evict import (
    EvictionPolicy,
    KVPool,
    PolicyConfig,
    PolicyConfigError,
    PolicySpec,
    RadixCache,
    hookimpl,
    registry,
)
from radix_evict.builtin_policies.frequency import SLRUConfig
from radix_evict.builtin_policies.tlru import TLRUConfig
from radix_evict.policies.derive import DerivedConfig, WorkloadStats
from radix_evict.sim.configs import DERIVED, describe_workload, resolve_config
from radix_evict.sim.replay import PolicyRun, as_runs, replay, replay_policies
from radix_evict.sim.workloads import get_workload

pytestmark = pytest.mark.usefixtures("only_builtin_plugins")
SMALL = ["--param", "convs=30", "--pool-tokens", "6000"]


class WindowConfig(PolicyConfig):
    window: int = Field(ge=1, description="required: no sensible default")


class WindowPolicy(EvictionPolicy):
    """Least recently used first (a stand-in third-party policy that needs a config)."""

    name = "windowed"
    Config = WindowConfig

    def score(self, node: Any) -> float:
        return node.last_access_time


def _plugin(deriver: Callable[[WorkloadStats], Any] | None) -> Any:
    class Plugin:
        @hookimpl
        def radix_evict_register_policies(self, register: Any) -> None:
            register(PolicySpec(name=WindowPolicy.name, policy=WindowPolicy,
                                summary="windowed lru", derive_config=deriver))

        @hookimpl
        def radix_evict_extend_choices(self, extend: Any) -> None:
            extend(WindowPolicy.name)

    return Plugin()


@pytest.fixture
def windowed() -> Iterator[Callable[[Callable[[WorkloadStats], Any] | None], None]]:
    def install(deriver: Callable[[WorkloadStats], Any] | None) -> None:
        registry.add_plugin(_plugin(deriver), name="test-derive")

    yield install
    registry.remove_plugin("test-derive")


def _by_mean(stats: WorkloadStats) -> DerivedConfig:
    w = max(1, round(stats.mean_growth))
    return DerivedConfig({"window": w}, derivation=f"window = mean growth {w}",
                         rule="window = mean growth", details={"samples": stats.samples})


# ------------------------------------------------------------------ a plugin's deriver
def test_a_plugin_policy_runs_with_its_derived_config(windowed: Any) -> None:
    windowed(_by_mean)
    w = get_workload("chat", convs=30)
    expected = round(w.stats().mean_growth)
    r = replay(w, "windowed", pool_tokens=6000)
    assert r.config_source == DERIVED and r.policy_config == {"window": expected}
    info = describe_workload(w)
    assert info["suggested_windowed"]["config"] == {"window": expected}
    assert info["suggested_windowed"]["samples"] == w.stats().samples


def test_the_cli_says_and_marks_a_plugin_derived_config(windowed: Any) -> None:
    windowed(_by_mean)
    r = run_cli("simulate", *SMALL, "-p", "windowed", "-p", "lru")
    assert r.exit_code == 0, r.output
    assert "windowed: no --config given, so simulate derives it from chat" in r.stderr
    assert "(derived)" in r.stdout
    r = run_cli("simulate", *SMALL, "-p", "windowed", "--json")
    data = json.loads(r.stdout)
    assert data["windowed_derived"]["chat"]["derivation"].startswith("window = mean growth")
    assert data["tlru_derived"] == {}, "tlru did not run, so nothing was derived for it"


def test_a_mapping_is_a_derived_config_too(windowed: Any) -> None:
    windowed(lambda stats: {"window": 7})
    r = replay(get_workload("chat", convs=10), "windowed", pool_tokens=6000)
    assert r.policy_config == {"window": 7} and r.config_source == DERIVED


def test_without_a_deriver_a_required_key_fails_before_replaying(windowed: Any) -> None:
    windowed(None)
    r = run_cli("simulate", *SMALL, "-p", "windowed")
    assert r.exit_code == 1 and "window" in r.stderr and "required key is missing" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize(("deriver", "needle"), [
    (lambda stats: {"window": 0}, "derived an invalid config"),
    (lambda stats: 1 / 0, "raised ZeroDivisionError"),
    (lambda stats: 42, "must return a dict"),
])
def test_a_bad_deriver_is_a_clear_error(windowed: Any, deriver: Any, needle: str) -> None:
    windowed(deriver)
    with pytest.raises(PolicyConfigError, match=needle) as e:
        replay(get_workload("chat", convs=10), "windowed", pool_tokens=6000)
    assert "'windowed'" in str(e.value) and "'test-derive'" in str(e.value), "names whose"
    r = run_cli("simulate", *SMALL, "-p", "windowed")
    assert r.exit_code == 1 and needle in r.stderr and "Traceback" not in r.stderr
    # A broken deriver of a policy that does not run changes nothing.
    ok = run_cli("simulate", *SMALL, "-p", "lru", "--json")
    assert ok.exit_code == 0, ok.output
    assert "suggested_windowed" not in json.loads(ok.stdout)["workload"]


def test_a_deriver_that_is_not_callable_fails_its_plugin() -> None:
    class Broken:
        @hookimpl
        def radix_evict_register_policies(self, register: Any) -> None:
            register(PolicySpec(name="broken-derive", policy=WindowPolicy,
                                derive_config={"window": 3}))

    registry.add_plugin(Broken(), name="test-broken-derive")
    try:
        assert "broken-derive" not in registry
        assert any("derive_config must be a function" in str(f) for f in registry.failures)
    finally:
        registry.remove_plugin("test-broken-derive")


# ------------------------------------------------------------------ the default list
def test_the_default_policies_are_the_registry_s_own_choices(windowed: Any) -> None:
    windowed(_by_mean)
    assert "windowed" in registry.choices()
    assert registry.own_choices() == ["lru", "lfu", "slru", "priority", "tlru"]
    rows = replay_policies(get_workload("chat", convs=10), pool_tokens=6000)
    assert [r.label for r in rows] == registry.own_choices()


# ------------------------------------------------------------------ one validation per config
def test_a_cli_config_is_parsed_and_validated_once(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    validated: list[Any] = []
    real_parse = config_mod.parse_json_config
    real_validate = TLRUConfig.model_validate.__func__

    def parse(policy: str, text: str) -> Any:
        parsed.append(text)
        return real_parse(policy, text)

    def validate(cls: Any, data: Any, **kw: Any) -> Any:
        validated.append(data)
        return real_validate(cls, data, **kw)

    monkeypatch.setattr(config_mod, "parse_json_config", parse)
    monkeypatch.setattr(TLRUConfig, "model_validate", classmethod(validate))
    cfg = '{"threshold": 640, "next_prompt_estimate": 100}'
    r = run_cli("simulate", *SMALL, "--jobs", "1", "-p", "tlru", "-c", cfg,
                                 "-p", "lru", "--json")
    assert r.exit_code == 0, r.output
    given = {"threshold": 640, "next_prompt_estimate": 100}
    assert parsed == [cfg] and validated.count(given) == 1
    # The only other tlru validation: the workload's suggested (derived) config, also once.
    data = json.loads(r.stdout)
    assert [v for v in validated if v != given] == [data["workload"]["suggested_tlru"]["config"]]
    assert data["results"][0]["policy_config"] == given


def test_a_workload_s_derived_config_is_derived_once() -> None:
    w = get_workload("chat", convs=10)
    first = resolve_config(w, "tlru", None)
    assert resolve_config(w, "tlru", None) is first
    assert isinstance(first.config, TLRUConfig) and first.source == DERIVED


def test_runs_carry_frozen_validated_configs_shared_by_workers() -> None:
    [run] = as_runs([("slru", '{"protected_threshold": 3}')])
    assert isinstance(run.config, SLRUConfig) and run.config.protected_threshold == 3
    with pytest.raises(Exception, match="frozen"):
        run.config.protected_threshold = 4
    w = get_workload("chat", convs=20)
    one = replay_policies(w, [run, "lru"], pool_tokens=6000, workers=1)
    two = replay_policies(w, [run, "lru"], pool_tokens=6000, workers=2)
    assert [r.hit_rate for r in one] == [r.hit_rate for r in two]
    assert one[0].policy_config == two[0].policy_config == {"protected_threshold": 3}


def test_the_cache_takes_a_validated_config_object_of_its_own_model() -> None:
    pool = KVPool(size=16, device="cpu", layers=0)
    cfg = TLRUConfig(threshold=8, next_prompt_estimate=2)
    cache = RadixCache(pool, policy="tlru", policy_config=cfg)
    assert cache.policy.config is cfg
    with pytest.raises(PolicyConfigError, match="is a SLRUConfig, but policy 'tlru' takes a "
                                                "TLRUConfig"):
        RadixCache(pool, policy="tlru", policy_config=SLRUConfig())
    with pytest.raises(PolicyConfigError):
        as_runs([PolicyRun("tlru", "{}")])
