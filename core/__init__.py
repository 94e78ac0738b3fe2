"""radix-evict: KV-cache eviction policies for radix prefix caches.

Importing this package loads no plugin: the policy registry loads entry points
lazily, the first time it is asked for a policy.
"""

from __future__ import annotations

import warnings

from radix_evict.cache.compiled import stale_modules
from radix_evict.cache.pool import Allocator, KVPool
from radix_evict.cache.radix_cache import MatchResult, RadixCache
from radix_evict.cache.stats import CacheStats
from radix_evict.cache.tree import TreeNode
from radix_evict.errors import (
    ConfigProblem,
    PluginError,
    PluginLoadError,
    PolicyConfigError,
    PolicyConflictError,
    PolicyError,
    RadixEvictError,
)
from radix_evict.policies.contract import EvictionPolicy, NoConfig, PolicyConfig
from radix_evict.policies.hookspecs import hookimpl
from radix_evict.policies.registry import load_policy, registry
from radix_evict.policies.spec import PolicySpec

__version__ = "0.1.0"

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
    "CacheStats",
    "ConfigProblem",
    "EvictionPolicy",
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
    "TreeNode",
    "__version__",
    "hookimpl",
    "load_policy",
    "registry",
]
