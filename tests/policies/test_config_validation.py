"""Strict policy config: every malformed config is refused with a precise, readable error."""

from __future__ import annotations

import math
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field

from radix_evict import PolicyConfig
from radix_evict.errors import ConfigProblem, PolicyConfigError
from radix_evict.policies.config import validate_config
from radix_evict.policies.describe import describe_model
from radix_evict.policies.plugins import ENV_VAR
from radix_evict.policies.registry import Registry
from radix_evict.policies.strictness import config_model_problems
from radix_evict.suggest import did_you_mean

REG = Registry(environ={ENV_VAR: ""})


def problems(name: str, config: Any) -> list[ConfigProblem]:
    found = REG.validate(name, config)
    with pytest.raises(PolicyConfigError) as info:
        REG.load_policy(name, config)
    assert info.value.problems == found  # load_policy and validate agree
    return found


def error_text(name: str, config: Any) -> str:
    with pytest.raises(PolicyConfigError) as info:
        REG.load_policy(name, config)
    return str(info.value)


@pytest.mark.parametrize("name", ["lru", "lfu", "priority", "fifo", "mru", "filo"])
def test_keyless_policies_refuse_any_key(name: str) -> None:
    [p] = problems(name, {"capacity": 1})
    assert (p.policy, p.key, p.type) == (name, "capacity", "extra_forbidden")
    assert p.valid_keys == ()
    text = error_text(name, {"capacity": 1})
    assert f"'{name}'" in text and "'capacity'" in text and "takes no config keys" in text


def test_near_miss_suggests_the_key() -> None:
    [p] = problems("slru", {"protected_treshold": 3})
    assert p.hint == "did you mean 'protected_threshold'?"
    text = error_text("slru", {"protected_treshold": 3})
    for part in ("'slru'", "'protected_treshold'", "unknown key",
                 "did you mean 'protected_threshold'?", "valid keys: protected_threshold"):
        assert part in text


def test_far_miss_lists_valid_keys_without_guessing() -> None:
    [p] = problems("tlru", {"banana": 1, "threshold": 3, "next_prompt_estimate": 1})
    assert p.hint is None
    assert p.valid_keys == ("threshold", "next_prompt_estimate")


def test_every_problem_is_reported_not_just_the_first() -> None:
    found = problems("slru", {"a": 1, "protected_threshold": "2", "b": 2})
    assert {p.key for p in found} == {"a", "b", "protected_threshold"}
    assert "3 problems" in error_text("slru", {"a": 1, "protected_threshold": "2", "b": 2})


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("4", "the string '4'"),
        (4.5, "the number 4.5"),
        (4.0, "the number 4.0"),
        (True, "the boolean true"),
        (None, "null"),
        (math.nan, "NaN"),
        (math.inf, "Infinity"),
        (-math.inf, "-Infinity"),
        ([4], "a list"),
        ({"v": 4}, "an object"),
    ],
)
def test_no_silent_coercion_to_int(value: Any, fragment: str) -> None:
    [p] = problems("slru", {"protected_threshold": value})
    assert p.key == "protected_threshold"
    assert fragment in p.msg
    assert p.valid_keys == ("protected_threshold",)


def test_quoted_number_gets_a_hint() -> None:
    [p] = problems("slru", {"protected_threshold": "4"})
    assert p.hint == "write the number without quotes"


def test_nan_and_infinity_in_json_are_rejected_by_key() -> None:
    [p] = problems("slru", '{"protected_threshold": NaN}')
    assert (p.key, p.type) == ("protected_threshold", "finite_number")
    [q] = problems("tlru", '{"threshold": Infinity, "next_prompt_estimate": 0}')
    assert q.key == "threshold"


def test_bounds_are_enforced() -> None:
    [p] = problems("slru", {"protected_threshold": -1})
    assert p.type == "greater_than_equal" and "must be >= 0" in p.msg
    # SGLang 0.5.23 accepts 0 (every prefix protected: plain LRU order), so radix-evict does too.
    assert REG.validate("slru", {"protected_threshold": 0}) == []
    assert REG.load_policy("slru", {"protected_threshold": 0}).config.protected_threshold == 0
    [q] = problems("tlru", {"threshold": 5, "next_prompt_estimate": -1})
    assert q.key == "next_prompt_estimate" and "must be >= 0" in q.msg


@pytest.mark.parametrize(
    "config",
    [None, {}, {"threshold": 4, "next_prompt_estimate": 4},
     {"threshold": 4, "next_prompt_estimate": 6}, {"threshold": 0}],
)
def test_tlru_threshold_must_exceed_estimate(config: Any) -> None:
    [p] = problems("tlru", config)
    assert p.key == "threshold"
    assert "threshold" in p.msg and "next_prompt_estimate" in p.msg
    assert "exactly LRU" in p.msg


@pytest.mark.parametrize(("t", "q"), [(4, 0), (4, 2), (6, 2), (1, 0)])
def test_tlru_valid_configs(t: int, q: int) -> None:
    policy = REG.load_policy("tlru", {"threshold": t, "next_prompt_estimate": q})
    assert policy.config.model_dump() == {"threshold": t, "next_prompt_estimate": q}


def test_malformed_json_says_where() -> None:
    [p] = problems("slru", '{"protected_threshold": 2,, }')
    assert p.type == "json_invalid"
    assert "line 1, column 27" in p.msg
    assert p.hint is not None and "^" in p.hint
    [q] = problems("slru", '{\n  "protected_threshold": 2\n  "x": 1\n}')
    assert "line 3" in q.msg


@pytest.mark.parametrize(
    ("config", "kind"),
    [("", "json_invalid"), ("[1, 2]", "config_type"), ("3", "config_type"),
     ([("protected_threshold", 2)], "config_type"), ('{"protected_threshold": 2, '
                                                     '"protected_threshold": 3}', "duplicate_key")],
)
def test_config_shape_errors(config: Any, kind: str) -> None:
    [p] = problems("slru", config)
    assert p.type == kind


def test_json_null_and_none_mean_no_keys() -> None:
    assert REG.validate("slru", "null") == []
    assert REG.validate("slru", None) == []
    assert REG.load_policy("slru", "null").config.model_dump() == {"protected_threshold": 2}


def test_config_instances_pass_through_and_foreign_ones_fail() -> None:
    model = REG.get("slru").config_model
    cfg = model(protected_threshold=7)
    assert REG.load_policy("slru", cfg).config is cfg
    [p] = problems("slru", REG.get("tlru").config_model(threshold=3, next_prompt_estimate=1))
    assert p.type == "config_type" and "TLRUConfig" in p.msg


def test_configs_are_frozen() -> None:
    cfg = REG.load_policy("slru", {"protected_threshold": 3}).config
    with pytest.raises(Exception, match="frozen"):
        cfg.protected_threshold = 5  # type: ignore[attr-defined]


def test_problem_serializes() -> None:
    [p] = problems("slru", {"protected_threshold": "x"})
    d = p.to_dict()
    assert d["policy"] == "slru" and d["key"] == "protected_threshold" and d["input"] == "'x'"
    assert d["valid_keys"] == ["protected_threshold"]


@settings(max_examples=150, deadline=None)
@given(st.text(min_size=1, max_size=30))
def test_any_unknown_key_is_named(key: str) -> None:
    if key == "protected_threshold":
        return
    found = REG.validate("slru", {key: 1})
    assert [p.key for p in found] == [key]
    assert found[0].type == "extra_forbidden"


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.text(), st.floats(allow_nan=True), st.booleans(), st.none(),
                 st.lists(st.integers(), max_size=2)))
def test_any_non_int_value_is_refused(value: Any) -> None:
    found = REG.validate("slru", {"protected_threshold": value})
    assert found and all(p.key == "protected_threshold" for p in found)


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=1, max_value=2**62))
def test_any_positive_int_is_accepted(value: int) -> None:
    assert REG.validate("slru", {"protected_threshold": value}) == []


# ---------------------------------------------------------------- nested models and strictness


class Tier(PolicyConfig):
    weight: float = Field(default=1.0, gt=0)
    name: Literal["gold", "silver"] = "gold"


class TieredConfig(PolicyConfig):
    tiers: list[Tier] = []
    default: Tier = Tier()
    limit: int | None = None


def test_nested_errors_have_dotted_keys_and_the_nested_valid_keys() -> None:
    cfg, found = validate_config("tiered", TieredConfig, {"default": {"wieght": 2.0}})
    assert cfg is None
    [p] = found
    assert p.key == "default.wieght"
    assert p.valid_keys == ("weight", "name")
    assert p.hint == "did you mean 'weight'?"
    _, found = validate_config("tiered", TieredConfig, {"tiers": [{"weight": 1.0}, {"weight": -1}]})
    [q] = found
    assert q.key == "tiers[1].weight" and "must be > 0" in q.msg
    _, found = validate_config("tiered", TieredConfig, {"default": {"weight": math.nan}})
    assert [x.key for x in found] == ["default.weight"]


def test_strict_models_pass_the_strictness_check() -> None:
    assert config_model_problems(TieredConfig) == []
    assert config_model_problems(REG.get("tlru").config_model) == []


class Open(BaseModel):
    x: int = 1


class AllowsExtra(PolicyConfig):
    model_config = ConfigDict(extra="allow")


class IgnoresExtra(PolicyConfig):
    model_config = ConfigDict(extra="ignore")


class NestedOpen(PolicyConfig):
    inner: Open = Open()


class DictField(PolicyConfig):
    weights: dict[str, int] = {}


class AnyField(PolicyConfig):
    blob: Any = None


class Coercing(PolicyConfig):
    model_config = ConfigDict(strict=False)


class Mutable(PolicyConfig):
    model_config = ConfigDict(frozen=False)


class NaNAllowed(PolicyConfig):
    model_config = ConfigDict(allow_inf_nan=True)


class NotPolicyConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


@pytest.mark.parametrize(
    ("model", "needle"),
    [
        (AllowsExtra, "unknown keys"),
        (IgnoresExtra, "unknown keys"),
        (NestedOpen, "nested model Open"),
        (DictField, "weights accepts unknown keys"),
        (AnyField, "blob accepts any value"),
        (Coercing, "coerces"),
        (Mutable, "frozen"),
        (NaNAllowed, "NaN"),
        (NotPolicyConfig, "not a subclass"),
    ],
)
def test_lax_models_are_refused(model: type, needle: str) -> None:
    found = config_model_problems(model)
    assert found and any(needle in p for p in found), found


def test_describe_model_flattens_nested_keys() -> None:
    keys = {k.key: k for k in describe_model(TieredConfig)}
    assert set(keys) == {"tiers", "default", "default.weight", "default.name", "limit"}
    assert keys["default.weight"].constraint == "> 0"
    assert keys["default.name"].type == 'one of "gold", "silver"'
    assert keys["limit"].type == "integer | null"
    assert keys["tiers"].type.startswith("list of object")


def test_did_you_mean_is_case_insensitive() -> None:
    assert did_you_mean("LRU", ["lru", "lfu"]) == "did you mean 'lru'?"
    assert did_you_mean("qqqq", ["lru"]) is None
