"""radix-evict's conformance kit for policy packages, and the pytest plugin that runs it.

The plugin loads in any pytest session where radix-evict is installed
(entry point ``radix_evict`` in group ``pytest11``) but does nothing unless a
test class opts in with the marker::

    import pytest

    @pytest.mark.radix_evict_conformance("mypolicy", config={"window": 4}, public=True)
    class TestMyPolicyConformance:
        pass   # the plugin adds the conformance tests to this class

The class gains ``test_registration``, ``test_config_is_strict``,
``test_score_is_total_and_deterministic``, ``test_cache_invariants`` and
``test_cache_invariants_paged``. Subclassing :class:`PolicyConformance` with
``policy = "mypolicy"`` does the same without the marker. ``--radix-evict-examples N``
sets how many hypothesis examples each property runs.

:func:`insert_as_request` fills a cache as finished requests would, for a
policy's own tests. Fixture ``radix_evict_plugin`` registers a plugin object in-process for the
duration of one test (unit tests of hook code without installing anything).
:func:`call_bounded` runs a call under a time and memory limit: a test that a reader
refuses a FIFO or ``/dev/zero`` then fails, instead of hanging, if the reader regresses.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pytest

from radix_evict.testing.bounded import BoundExceeded, call_bounded
from radix_evict.testing.checks import (
    DEFAULT_EXAMPLES,
    CacheHarness,
    check_cache_invariants,
    check_config_strict,
    check_policy,
    check_registration,
    check_score,
    score_snapshots,
)
from radix_evict.testing.requests import insert_as_request
from radix_evict.testing.snapshots import NodeSnapshot, chain

__all__ = [
    "MARKER",
    "BoundExceeded",
    "CacheHarness",
    "NodeSnapshot",
    "PolicyConformance",
    "call_bounded",
    "chain",
    "check_cache_invariants",
    "check_config_strict",
    "check_policy",
    "check_registration",
    "check_score",
    "insert_as_request",
    "score_snapshots",
]

MARKER = "radix_evict_conformance"
_OPTION = "--radix-evict-examples"


class PolicyConformance:
    """The conformance suite as a test-class mixin; the marker mixes it in for you."""

    policy: ClassVar[str] = ""
    config: ClassVar[Any] = None
    public: ClassVar[bool | None] = None
    max_examples: ClassVar[int | None] = None

    def _examples(self, request: pytest.FixtureRequest) -> int:
        if self.max_examples is not None:
            return self.max_examples
        option = request.config.getoption(_OPTION, default=None)
        return int(option) if option else DEFAULT_EXAMPLES

    def _name(self) -> str:
        if not self.policy:
            raise pytest.UsageError(
                f"{type(self).__name__}: name the policy (marker argument or `policy = ...`)"
            )
        return self.policy

    def test_registration(self) -> None:
        check_registration(self._name(), self.config, public=self.public)

    def test_config_is_strict(self) -> None:
        check_config_strict(self._name(), self.config)

    def test_score_is_total_and_deterministic(self, request: pytest.FixtureRequest) -> None:
        check_score(self._name(), self.config, max_examples=self._examples(request))

    def test_cache_invariants(self, request: pytest.FixtureRequest) -> None:
        check_cache_invariants(self._name(), self.config, max_examples=self._examples(request))

    def test_cache_invariants_paged(self, request: pytest.FixtureRequest) -> None:
        check_cache_invariants(
            self._name(), self.config, page_size=4, max_examples=self._examples(request)
        )


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("radix-evict", "radix-evict policy conformance")
    group.addoption(
        _OPTION,
        type=int,
        default=None,
        help=f"hypothesis examples per conformance property (default {DEFAULT_EXAMPLES})",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(policy, config=None, public=None, max_examples=None): add radix-evict's "
        "policy conformance tests to this test class",
    )


def _marker_of(obj: type) -> pytest.Mark | None:
    for mark in getattr(obj, "pytestmark", []):
        if getattr(mark, "name", None) == MARKER:
            return mark
    return None


def _suite_for(cls: type, mark: pytest.Mark) -> type:
    kwargs = dict(mark.kwargs)
    policy = mark.args[0] if mark.args else kwargs.pop("policy", "")
    attrs: dict[str, Any] = {
        "__module__": cls.__module__,
        "__qualname__": cls.__qualname__,
        "__doc__": cls.__doc__,
        "policy": policy,
    }
    for key in ("config", "public", "max_examples"):
        if key in kwargs:
            attrs[key] = kwargs.pop(key)
    if kwargs:
        raise pytest.UsageError(f"{MARKER}: unknown arguments {sorted(kwargs)}")
    return type(cls.__name__, (cls, PolicyConformance), attrs)


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> Any:
    """Mix the conformance suite into a test class that carries the marker."""
    if not inspect.isclass(obj) or issubclass(obj, PolicyConformance):
        return None
    if not isinstance(collector, (pytest.Module, pytest.Class)):
        return None
    if not collector.istestclass(obj, name):
        return None
    mark = _marker_of(obj)
    if mark is None:
        return None
    setattr(collector.obj, name, _suite_for(obj, mark))  # the Class collector reads it back by name
    return pytest.Class.from_parent(collector, name=name)


@pytest.fixture
def radix_evict_plugin() -> Iterator[Callable[..., Any]]:
    """Register plugin objects in the process-wide registry for one test.

    Call it as ``radix_evict_plugin(module_or_object, name="mine")``; it returns
    the registry (reloaded with the plugin) and undoes the registration after
    the test.
    """
    from radix_evict.policies.registry import registry

    added: list[str] = []

    def add(plugin: Any, name: str = "in-process", **kwargs: Any) -> Any:
        registry.add_plugin(plugin, name=name, **kwargs)
        added.append(name)
        return registry

    yield add
    for name in added:
        registry.remove_plugin(name)
