"""The factories the plugin puts into SGLang's strategy registry (``_EVICTION_POLICY_FACTORIES``).

SGLang builds a strategy as ``factory(**config)`` (``factory()`` for an empty config), so
a bad key surfaces as a raw ``TypeError`` and a bad value not at all until the first
eviction. Both kinds of factory here validate first, with radix-evict's rules and
messages (:class:`radix_evict.PolicyConfigError`, a ``ValueError``), through
``registry.parse_config`` (the one path from a policy and config to a run), so the cache
construction fails at startup naming the key, the valid keys and the likely typo:

- :func:`validated_native` keeps SGLang's own strategy (and so the Rust core's view of
  it) for its eight names, building it from the validated keys;
- :func:`bridged` builds the radix-evict policy and wraps it in a
  :class:`~radix_evict.sglang.adapter.BridgedStrategy`, with the lifecycle callbacks of a
  stateful policy ready for SGLang's tree events.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from radix_evict.policies.registry import Registry
from radix_evict.sglang.adapter import BridgedStrategy
from radix_evict.sglang.events import make_events

Factory = Callable[..., Any]


def validated_native(name: str, native: Factory, registry: Registry) -> Factory:
    """SGLang's factory for ``name``, behind radix-evict's validation of the config."""

    def build(**config: Any) -> Any:
        cfg = registry.parse_config(name, config or None)
        # Only the keys the operator set: SGLang's defaults stay SGLang's.
        return native(**cfg.model_dump(by_alias=True, include=cfg.model_fields_set))

    build.__name__ = build.__qualname__ = f"validated_{name}"
    build.native = native  # type: ignore[attr-defined]
    build.radix_evict_policy = name  # type: ignore[attr-defined]
    return build


def bridged(name: str, registry: Registry) -> Factory:
    """A factory that builds radix-evict's policy ``name`` for SGLang's tree."""

    def build(**config: Any) -> BridgedStrategy:
        # Validated once, by the one path every run takes; load_policy takes the frozen result.
        policy = registry.load_policy(name, registry.parse_config(name, config or None))
        # A stateful policy hears SGLang's tree events (radix_evict.sglang.events).
        return BridgedStrategy(policy, make_events(policy))

    build.__name__ = build.__qualname__ = f"bridged_{name}"
    build.radix_evict_policy = name  # type: ignore[attr-defined]
    build.radix_evict_bridged = True  # type: ignore[attr-defined]
    return build


def is_bridged_factory(factory: Any) -> bool:
    """Whether an entry of SGLang's strategy registry builds a radix-evict policy."""
    return getattr(factory, "radix_evict_bridged", False) is True


def is_bridged(strategy: Any) -> bool:
    """Whether SGLang's strategy object is a radix-evict policy (needs the Python core)."""
    return isinstance(strategy, BridgedStrategy)
