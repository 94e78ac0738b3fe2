"""The one documented helper that turns a policy name into a policy object for the cache.

The spec (``shared/spec/api.md``) binds ``RadixCache(pool, policy="lru",
policy_config=...)``, so the cache keeps taking a name; this module is the
only way a name becomes a policy object there. Everything above the cache
hands it a validated config (``sim.configs.PolicyRun``) or a built policy.

``RadixCache(pool, policy="lru")`` takes a name, but the cache must not load the
registry (pluggy, every plugin's entry point) to be imported: it calls
:func:`policy_by_name` and :func:`policy_origin` here, which depend only on the
policy contract. The registry installs itself with :func:`install` when it is
imported; a string that must be resolved before anything imported it imports
``radix_evict.policies.registry`` by name, once, which installs it.

A policy object passed to the cache directly needs no registry: if none is
installed, no registry has loaded, so nothing registered it and it has no origin.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Protocol

from radix_evict.policies.contract import EvictionPolicy

if TYPE_CHECKING:  # the arrow import-linter and the docs' graph see; loaded at call time
    from radix_evict.policies import registry as _registry  # noqa: F401

__all__ = ["PolicyResolver", "install", "policy_by_name", "policy_origin"]

REGISTRY_MODULE = "radix_evict.policies.registry"


class PolicyResolver(Protocol):
    """What the registry provides the cache through this seam."""

    def load_policy(self, name: str, config: Any = None) -> EvictionPolicy[Any]:
        """A policy built from a validated config; raises PolicyConfigError."""
        ...

    def origin_of(self, policy: EvictionPolicy[Any]) -> tuple[str | None, str | None]:
        """(``dist version (entry point 'ep')``, distribution) of what registered it."""
        ...


_resolver: PolicyResolver | None = None


def install(resolver: PolicyResolver) -> None:
    """Make ``resolver`` the one that turns names into policies (the registry calls this)."""
    global _resolver
    _resolver = resolver


def _current() -> PolicyResolver:
    if _resolver is None:
        importlib.import_module(REGISTRY_MODULE)  # installs the process-wide registry
    assert _resolver is not None, f"{REGISTRY_MODULE} did not install a resolver"
    return _resolver


def policy_by_name(name: Any, config: Any = None) -> EvictionPolicy[Any]:
    """The registered policy ``name`` with ``config`` validated (PolicyConfigError if not)."""
    return _current().load_policy(name, config)


def policy_origin(policy: EvictionPolicy[Any]) -> tuple[str | None, str | None]:
    """Where ``policy``'s class was registered from, for error messages; (None, None) if not."""
    if _resolver is None:
        return None, None
    return _resolver.origin_of(policy)
