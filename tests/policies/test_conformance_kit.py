"""The conformance kit: it passes the built-ins and catches broken policies."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import Phase

from radix_evict import EvictionPolicy, PolicyError, PolicySpec, hookimpl
from radix_evict.policies.registry import Registry
from radix_evict.testing import (
    NodeSnapshot,
    chain,
    check_cache_invariants,
    check_config_strict,
    check_policy,
    check_registration,
    check_score,
)

pytest_plugins = ["pytester"]

# Failing examples need no shrinking here, and a fixed example sequence keeps
# the "catches" tests from depending on luck.
FAST_FAIL = {"derandomize": True, "phases": [Phase.explicit, Phase.generate], "database": None}

BUILTINS = [
    ("lru", None, True),
    ("lfu", None, True),
    ("slru", {"protected_threshold": 3}, True),
    ("priority", None, True),
    ("tlru", {"threshold": 4, "next_prompt_estimate": 1}, True),
    ("fifo", None, False),
    ("mru", None, False),
    ("filo", None, False),
]


@pytest.mark.parametrize(("name", "config", "public"), BUILTINS)
def test_builtins_conform(name: str, config: Any, public: bool) -> None:
    reg = Registry(environ={"RADIX_EVICT_PLUGINS": ""})
    check_policy(name, config, public=public, max_examples=25, registry=reg,
                 hypothesis_settings={"derandomize": True, "database": None})


_counter = itertools.count()


class Flaky(EvictionPolicy):
    """Depends on how often it was called: not deterministic."""

    def score(self, node: Any) -> int:
        return next(_counter) % 5


class NaNScore(EvictionPolicy):
    def score(self, node: Any) -> float:
        return math.nan if node.hit_count >= 2 else float(node.last_access_time)


class MixedTypes(EvictionPolicy):
    def score(self, node: Any) -> Any:
        return (node.priority, 0) if node.hit_count >= 2 else float(node.last_access_time)


class Raises(EvictionPolicy):
    def score(self, node: Any) -> float:
        return node.last_access_time / (node.hit_count - 1)


class Mutates(EvictionPolicy):
    def score(self, node: Any) -> float:
        node.hit_count += 1
        return float(node.last_access_time)


class ReadsSibling(EvictionPolicy):
    """Reads another node's state: the score of an untouched leaf can change."""

    def score(self, node: Any) -> float:
        parent = node.parent
        return float(sum(c.last_access_time for c in parent.children.values()))


def _register(reg: Registry, **policies: type[EvictionPolicy]) -> None:
    class Plugin:
        @hookimpl
        def radix_evict_register_policies(self, register: Callable[[PolicySpec], None]) -> None:
            for name, cls in policies.items():
                register(PolicySpec(name=name, policy=cls, summary=f"broken: {name}"))

    reg.add_plugin(Plugin(), name="broken-policies", distribution="broken-dist")


@pytest.fixture
def broken() -> Registry:
    reg = Registry(environ={"RADIX_EVICT_PLUGINS": ""})
    _register(reg, flaky=Flaky, nan=NaNScore, mixed=MixedTypes, raises=Raises, mutates=Mutates,
              sibling=ReadsSibling)
    return reg


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("flaky", "not deterministic"),
        ("nan", "NaN"),
        ("mixed", "do not compare"),
        ("raises", "ZeroDivisionError"),
        ("mutates", "changed the node"),
    ],
)
def test_score_check_catches(broken: Registry, name: str, needle: str) -> None:
    with pytest.raises(AssertionError, match=needle):
        check_score(name, max_examples=100, registry=broken, hypothesis_settings=FAST_FAIL)


@pytest.mark.parametrize("name", ["flaky", "mixed", "sibling"])
def test_cache_check_catches_order_violations(broken: Registry, name: str) -> None:
    with pytest.raises((AssertionError, PolicyError)):
        check_cache_invariants(name, max_examples=100, registry=broken,
                               hypothesis_settings=FAST_FAIL)


def test_registration_check_wants_the_choice_list_when_public(broken: Registry) -> None:
    check_registration("flaky", registry=broken)
    with pytest.raises(AssertionError, match="not a --policy choice"):
        check_registration("flaky", public=True, registry=broken)
    with pytest.raises(AssertionError, match="not registered"):
        check_registration("nosuch", registry=broken)


def test_snapshots_are_consistent_chains() -> None:
    leaf = chain([{"num_tokens": 3}, {"num_tokens": 2, "history_len": 9}])
    assert isinstance(leaf, NodeSnapshot)
    assert (leaf.prefix_len, leaf.parent.prefix_len) == (5, 3)  # type: ignore[union-attr]
    assert leaf.history_len == 9 and leaf.parent.history_len == 9  # type: ignore[union-attr]
    assert leaf.lock_ref == 0 and leaf.children == {}
    twin = leaf.clone()
    assert twin is not leaf and twin.fields() == leaf.fields()


def test_config_check_runs_on_a_policy_with_keys() -> None:
    check_config_strict("slru", {"protected_threshold": 2},
                        registry=Registry(environ={"RADIX_EVICT_PLUGINS": ""}))


# ------------------------------------------------------------------ the pytest plugin itself

CONFTEST = """
from radix_evict import EvictionPolicy, PolicySpec, hookimpl, registry
import itertools

_c = itertools.count()


class Good(EvictionPolicy):
    def score(self, node):
        return (node.hit_count, node.last_access_time)


class Flaky(EvictionPolicy):
    def score(self, node):
        return next(_c) % 3


class Plugin:
    @hookimpl
    def radix_evict_register_policies(self, register):
        register(PolicySpec(name="goodpol", policy=Good, summary="good"))
        register(PolicySpec(name="flakypol", policy=Flaky, summary="flaky"))

    @hookimpl
    def radix_evict_extend_choices(self, extend):
        extend("goodpol")


registry.add_plugin(Plugin(), name="kit-test")
"""


def test_marker_adds_the_suite_and_it_passes(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.radix_evict_conformance("goodpol", public=True)
        class TestGood:
            def test_own(self):
                assert self.policy == "goodpol"
        """
    )
    result = pytester.runpytest("--radix-evict-examples", "15", "-v")
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(["*TestGood::test_cache_invariants_paged PASSED*",
                                 "*TestGood::test_own PASSED*"])


def test_marker_suite_fails_a_broken_policy(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.radix_evict_conformance("flakypol")
        class TestFlaky:
            pass
        """
    )
    result = pytester.runpytest("--radix-evict-examples", "30")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) >= 1
    result.stdout.fnmatch_lines(["*not deterministic*"])


def test_subclassing_works_without_the_marker(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        """
        from radix_evict.testing import PolicyConformance

        class TestGood(PolicyConformance):
            policy = "goodpol"
            max_examples = 10
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=5)


def test_unmarked_classes_are_untouched(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        class TestPlain:
            def test_one(self):
                pass
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
