"""The package as radix-evict sees it: registration, documentation, strict configs."""

from __future__ import annotations

import os

import pytest
import radix_evict_hints
from radix_evict_hints import plugin
from radix_evict_hints.retain import RetainConfig
from radix_evict_hints.session import SessionConfig

from radix_evict import load_policy, registry


@pytest.mark.parametrize("name", plugin.NAMES)
def test_registered_as_a_choice_from_this_distribution(name: str) -> None:
    assert name in registry.choices()
    spec = registry.check_choice(name)
    assert spec.distribution == "radix-evict-hints"
    assert spec.entry_point == "hints"
    assert spec.policy is plugin.POLICIES[name]
    assert load_policy(name).uses_context


def test_importing_the_package_registers_nothing() -> None:
    assert not any(hasattr(radix_evict_hints, hook) for hook in
                   ("radix_evict_register_policies", "radix_evict_extend_choices"))


def test_every_config_key_is_documented() -> None:
    with open(os.path.join(os.path.dirname(__file__), "..", "README.md"),
              encoding="utf-8") as f:
        readme = f.read()
    for model in (SessionConfig, RetainConfig):
        for key, field in model.model_fields.items():
            assert field.description, key
            assert f"`{key}`" in readme, key


def test_bad_config_names_the_key() -> None:
    with pytest.raises(Exception, match="horizon"):
        load_policy("session", {"horizon": -1})
    with pytest.raises(Exception, match="budget"):
        load_policy("retain", {"budget": 2})
