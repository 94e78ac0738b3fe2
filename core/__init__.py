"""radix-evict: KV-cache eviction policies for radix prefix caches.

Importing this package loads no plugin: the policy registry loads entry points
lazily, the first time it is asked for a policy. Nor does it import torch:
each public name below is imported on first use (PEP 562), so the
``radix-evict`` command starts in milliseconds and can turn a Ctrl-C during
its slow imports into one line (``radix_evict.cli.__main__``, also what
``python -m radix_evict.cli`` runs). Nothing in this package imports the CLI.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

from radix_evict.cache.compiled import stale_modules

if TYPE_CHECKING:  # what the lazy names are, for type checkers and readers
    from radix_evict.cache.context import RequestContext
    from radix_evict.cache.host_tier import HostTierSpec
    from radix_evict.cache.pool import Allocator, KVPool
    from radix_evict.cache.radix_cache import MatchResult, RadixCache
    from radix_evict.cache.stats import CacheStats
    from radix_evict.cache.tree import TreeNode
    from radix_evict.errors import (
        CacheBusyError,
        ConfigProblem,
        PluginError,
        PluginLoadError,
        PolicyConfigError,
        PolicyConflictError,
        PolicyError,
        RadixEvictError,
    )
    from radix_evict.policies.contract import (
        ConfigWarning,
        EvictionPolicy,
        NoConfig,
        PolicyConfig,
    )
    from radix_evict.policies.hookspecs import hookimpl
    from radix_evict.policies.registry import load_policy, registry
    from radix_evict.policies.spec import PolicySpec

__version__ = "0.1.0"

# Public name -> the module it lives in (tests/project/test_packaging.py checks this
# matches the TYPE_CHECKING imports above and __all__).
_LAZY = {
    "Allocator": "radix_evict.cache.pool",
    "KVPool": "radix_evict.cache.pool",
    "MatchResult": "radix_evict.cache.radix_cache",
    "RadixCache": "radix_evict.cache.radix_cache",
    "RequestContext": "radix_evict.cache.context",
    "HostTierSpec": "radix_evict.cache.host_tier",
    "CacheStats": "radix_evict.cache.stats",
    "TreeNode": "radix_evict.cache.tree",
    "CacheBusyError": "radix_evict.errors",
    "ConfigProblem": "radix_evict.errors",
    "PluginError": "radix_evict.errors",
    "PluginLoadError": "radix_evict.errors",
    "PolicyConfigError": "radix_evict.errors",
    "PolicyConflictError": "radix_evict.errors",
    "PolicyError": "radix_evict.errors",
    "RadixEvictError": "radix_evict.errors",
    "ConfigWarning": "radix_evict.policies.contract",
    "EvictionPolicy": "radix_evict.policies.contract",
    "NoConfig": "radix_evict.policies.contract",
    "PolicyConfig": "radix_evict.policies.contract",
    "hookimpl": "radix_evict.policies.hookspecs",
    "PolicySpec": "radix_evict.policies.spec",
    "load_policy": "radix_evict.policies.registry",
    "registry": "radix_evict.policies.registry",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'radix_evict' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


if _stale := stale_modules():
    warnings.warn(
        f"radix_evict: compiled {', '.join(_stale)} older than the source beside it; "
        "edits to those files have no effect until you rebuild (make install, or "
        "RADIX_EVICT_COMPILE=0 pip install -e . for an uncompiled build)",
        RuntimeWarning,
        stacklevel=2,
    )

__all__ = [
    "Allocator",
    "CacheBusyError",
    "CacheStats",
    "ConfigProblem",
    "ConfigWarning",
    "EvictionPolicy",
    "HostTierSpec",
    "KVPool",
    "MatchResult",
    "NoConfig",
    "PluginError",
    "PluginLoadError",
    "PolicyConfig",
    "PolicyConfigError",
    "PolicyConflictError",
    "PolicyError",
    "PolicySpec",
    "RadixCache",
    "RadixEvictError",
    "RequestContext",
    "TreeNode",
    "__version__",
    "hookimpl",
    "load_policy",
    "registry",
]
