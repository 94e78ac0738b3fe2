"""The registry's public API over the built-ins and in-process plugins."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import Field

from radix_evict import EvictionPolicy, PolicyConfig, PolicySpec, hookimpl, load_policy, registry
from radix_evict.errors import PolicyConfigError
from radix_evict.policies.plugins import ENV_VAR
from radix_evict.policies.registry import Registry
from radix_evict.policies.strictness import lax_schema_spots

PUBLIC = ["lru", "lfu", "slru", "priority", "tlru"]
HIDDEN = ["fifo", "mru", "filo"]


@pytest.fixture
def builtins_only() -> Registry:
    """Built-ins only, whatever else is installed in the environment."""
    return Registry(environ={ENV_VAR: ""})


class WindowConfig(PolicyConfig):
    window: int = Field(default=4, ge=1, description="Recent accesses to remember.")


class WindowPolicy(EvictionPolicy):
    name = "window"
    Config = WindowConfig

    def score(self, node: Any) -> float:
        return node.last_access_time // self.config.window  # type: ignore[attr-defined, no-any-return]


class WindowPlugin:
    @hookimpl
    def radix_evict_register_policies(self, register: Callable[[PolicySpec], None]) -> None:
        register(PolicySpec(name="window", policy=WindowPolicy, summary="bucketed recency"))

    @hookimpl
    def radix_evict_extend_choices(self, extend: Callable[..., None]) -> None:
        extend(["window", "mru"])


def test_public_choices_and_hidden_builtins(builtins_only: Registry) -> None:
    assert builtins_only.choices() == PUBLIC
    assert builtins_only.choices(extended=True) == PUBLIC + HIDDEN
    for name in HIDDEN:
        assert builtins_only.get(name).hidden
    for name in PUBLIC:
        assert not builtins_only.get(name).hidden


def test_spec_fields(builtins_only: Registry) -> None:
    spec = builtins_only.get("slru")
    assert spec.name == "slru"
    assert spec.policy.__name__ == "SLRUPolicy"
    assert spec.config_model.__name__ == "SLRUConfig"
    assert spec.summary
    assert spec.distribution is not None and spec.distribution.lower() == "radix-evict"
    assert spec.version
    assert spec.entry_point == "builtin"
    assert spec.keys == ("protected_threshold",)
    assert builtins_only.get("lru").keys == ()


def test_policy_spec_defaults_config_model_to_policy_config() -> None:
    assert PolicySpec(name="window", policy=WindowPolicy).config_model is WindowConfig


@pytest.mark.parametrize(
    ("name", "config", "cls"),
    [
        ("lru", None, "LRUPolicy"),
        ("lfu", {}, "LFUPolicy"),
        ("slru", {"protected_threshold": 3}, "SLRUPolicy"),
        ("slru", '{"protected_threshold": 5}', "SLRUPolicy"),
        ("priority", "{}", "PriorityPolicy"),
        ("tlru", {"threshold": 4, "next_prompt_estimate": 2}, "TLRUPolicy"),
        ("fifo", "null", "FIFOPolicy"),
        ("mru", None, "MRUPolicy"),
        ("filo", None, "FILOPolicy"),
    ],
)
def test_load_policy_builds_each_builtin(name: str, config: Any, cls: str) -> None:
    policy = load_policy(name, config)
    assert type(policy).__name__ == cls
    given = json.loads(config) if isinstance(config, str) else config
    fields = type(policy.config).model_fields
    expected = {k: f.default for k, f in fields.items()} | (given or {})
    assert policy.config.model_dump() == expected


def test_check_choice_hidden_policy_says_it_exists_and_how(builtins_only: Registry) -> None:
    with pytest.raises(PolicyConfigError) as info:
        builtins_only.check_choice("fifo")
    text = str(info.value)
    assert "'fifo' exists" in text and "hidden" in text
    assert "radix_evict_extend_choices" in text
    assert info.value.problems[0].type == "hidden_policy"
    assert builtins_only.check_choice("fifo", extended=True).name == "fifo"


def test_check_choice_unknown_lists_choices_and_suggests(builtins_only: Registry) -> None:
    with pytest.raises(PolicyConfigError) as info:
        builtins_only.check_choice("slr")
    text = str(info.value)
    assert "unknown policy 'slr'" in text
    assert ", ".join(PUBLIC) in text
    assert "did you mean 'slru'?" in text
    with pytest.raises(PolicyConfigError) as far:
        builtins_only.check_choice("zzzzzz")
    assert "did you mean" not in str(far.value)
    assert far.value.problems[0].type == "unknown_policy"


def test_library_api_accepts_hidden_names(builtins_only: Registry) -> None:
    assert type(builtins_only.load_policy("mru")).__name__ == "MRUPolicy"


def test_unknown_name_in_load_policy_is_policy_config_error() -> None:
    with pytest.raises(PolicyConfigError, match=r"unknown policy 'lruu'.*did you mean 'lru'"):
        load_policy("lruu")
    with pytest.raises(ValueError):  # PolicyConfigError is a ValueError
        load_policy("lruu")


def test_validate_never_raises_and_returns_problems(builtins_only: Registry) -> None:
    assert builtins_only.validate("slru", {"protected_threshold": 3}) == []
    [problem] = builtins_only.validate("slru", {"protected_treshold": 3})
    assert problem.key == "protected_treshold"
    assert problem.hint == "did you mean 'protected_threshold'?"
    assert builtins_only.validate("nope", None)[0].type == "unknown_policy"
    assert builtins_only.validate("fifo", None) == []
    assert builtins_only.validate("fifo", None, extended=False)[0].type == "hidden_policy"


def test_json_schema_is_closed_everywhere(builtins_only: Registry) -> None:
    schema = builtins_only.json_schema()
    assert set(schema["properties"]) == set(PUBLIC + HIDDEN)
    assert schema["additionalProperties"] is False
    assert list(lax_schema_spots(schema)) == []
    slru = schema["properties"]["slru"]
    assert slru["properties"]["protected_threshold"]["minimum"] == 0
    assert slru["additionalProperties"] is False
    assert schema["properties"]["lru"]["properties"] == {}
    one = builtins_only.json_schema("tlru")
    assert set(one["properties"]) == {"threshold", "next_prompt_estimate"}
    assert one["additionalProperties"] is False
    json.dumps(schema)  # serializable


def test_describe_config(builtins_only: Registry) -> None:
    [key] = builtins_only.describe_config("slru")
    assert (key.key, key.type, key.default, key.constraint) == ("protected_threshold", "integer",
                                                                 2, ">= 0")
    assert "protected" in key.description
    assert builtins_only.describe_config("lru") == []
    keys = {k.key for k in builtins_only.describe_config("tlru")}
    assert keys == {"threshold", "next_prompt_estimate"}


def test_in_process_plugin_fixture_registers_and_extends(
    radix_evict_plugin: Callable[..., Registry],
) -> None:
    assert "window" not in registry
    reg = radix_evict_plugin(WindowPlugin(), name="window-plugin", distribution="window-dist")
    assert reg is registry
    assert registry.choices()[-2:] == ["window", "mru"]
    spec = registry.check_choice("window")
    assert spec.distribution == "window-dist" and spec.entry_point == "window-plugin"
    policy = registry.load_policy("window", {"window": 8})
    assert policy.config.window == 8  # type: ignore[attr-defined]
    with pytest.raises(PolicyConfigError, match="did you mean 'window'"):
        registry.load_policy("window", {"windw": 8})


def test_in_process_plugin_is_gone_after_the_test() -> None:
    assert "window" not in registry
    assert "mru" not in registry.choices()


def test_registration_checks_are_enforced(builtins_only: Registry) -> None:
    class NoScore(EvictionPolicy):
        name = "noscore"

    class Bad:
        def __init__(self, spec: Any) -> None:
            self.spec = spec

        @hookimpl
        def radix_evict_register_policies(self, register: Callable[[Any], None]) -> None:
            register(self.spec)

    cases = {
        "not-a-spec": ("noscore", "takes a radix_evict.PolicySpec"),
        "bad-name": (PolicySpec(name="Has Space", policy=WindowPolicy), "is invalid"),
        "no-score": (PolicySpec(name="noscore", policy=NoScore), "does not define score"),
        "not-policy": (PolicySpec(name="notpolicy", policy=dict), "not a subclass"),  # type: ignore[arg-type]
    }
    for entry, (spec, _) in cases.items():
        builtins_only.add_plugin(Bad(spec), name=entry)
    failures = {f.entry_point: f for f in builtins_only.failures}
    for entry, (_, needle) in cases.items():
        assert needle in failures[entry].error, failures[entry]
    assert builtins_only.choices() == PUBLIC
