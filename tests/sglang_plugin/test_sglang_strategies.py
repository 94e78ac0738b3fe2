"""The factories the plugin gives SGLang validate through ``registry.parse_config``, once.

They are plain functions of a name and a registry, so they are tested here
without SGLang: a spy on ``parse_config`` counts what reaches it.
"""

from __future__ import annotations

from typing import Any

import pytest

from radix_evict import PolicyConfig, PolicyConfigError
from radix_evict.policies.registry import Registry, registry
from radix_evict.sglang import strategies
from radix_evict.sglang.adapter import BridgedStrategy

pytestmark = pytest.mark.usefixtures("only_builtin_plugins")


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """Every (name, config) ``registry.parse_config`` is asked to validate (not a frozen one)."""
    calls: list[tuple[str, Any]] = []
    real = Registry.parse_config

    def spy(self: Registry, name: str, config: Any = None) -> PolicyConfig:
        if not isinstance(config, PolicyConfig):
            calls.append((name, config))
        return real(self, name, config)

    monkeypatch.setattr(Registry, "parse_config", spy)
    return calls


def test_a_bridged_factory_validates_once_through_parse_config(
    parsed: list[tuple[str, Any]],
) -> None:
    build = strategies.bridged("slru", registry)
    strategy = build(protected_threshold=3)
    assert isinstance(strategy, BridgedStrategy)
    assert strategy.policy.config.protected_threshold == 3  # type: ignore[attr-defined]
    assert parsed == [("slru", {"protected_threshold": 3})]
    with pytest.raises(PolicyConfigError, match="protected_treshold"):
        build(protected_treshold=3)


def test_a_native_factory_validates_through_parse_config_and_passes_only_set_keys(
    parsed: list[tuple[str, Any]],
) -> None:
    got: list[dict[str, Any]] = []

    def native(**keys: Any) -> str:
        got.append(keys)
        return "sglang's strategy"

    build = strategies.validated_native("slru", native, registry)
    assert build(protected_threshold=2) == "sglang's strategy" and build() == "sglang's strategy"
    assert got == [{"protected_threshold": 2}, {}]
    assert parsed == [("slru", {"protected_threshold": 2}), ("slru", None)]
    with pytest.raises(PolicyConfigError, match="must be an integer"):
        build(protected_threshold="2")
    assert len(got) == 2  # SGLang's factory never saw the bad config
