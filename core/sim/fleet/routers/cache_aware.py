"""sglang-router 0.3.2's ``cache_aware`` policy (stub: the algorithm follows)."""

from __future__ import annotations

from collections.abc import Sequence

from radix_evict.sim.fleet.router import ReplicaState, RoutedRequest, Router, RouterConfig

__all__ = ["CacheAwareConfig", "CacheAwareRouter"]


class CacheAwareConfig(RouterConfig):
    """The ``cache_aware`` router's settings (sglang-router 0.3.2's defaults)."""


class CacheAwareRouter(Router):
    """Routes by approximate prefix match unless the load is unbalanced."""

    name = "cache_aware"
    config_model = CacheAwareConfig

    def route(self, request: RoutedRequest, replicas: Sequence[ReplicaState]) -> int:
        raise NotImplementedError("cache_aware: not written yet")
