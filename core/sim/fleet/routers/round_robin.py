"""``round_robin``: replica 0, 1, ..., N-1, 0, ... in arrival order, blind to load and cache."""

from __future__ import annotations

from collections.abc import Sequence

from radix_evict.sim.fleet.router import ReplicaState, RoutedRequest, Router, RouterConfig

__all__ = ["RoundRobinConfig", "RoundRobinRouter"]


class RoundRobinConfig(RouterConfig):
    """No settings."""


class RoundRobinRouter(Router):
    """Each request to the next replica in turn (sglang-router's ``round_robin``)."""

    name = "round_robin"
    config_model = RoundRobinConfig

    def __init__(self, config: RouterConfig, *, replicas: int, seed: int = 0) -> None:
        super().__init__(config, replicas=replicas, seed=seed)
        self._next = 0

    def route(self, request: RoutedRequest, replicas: Sequence[ReplicaState]) -> int:
        i = self._next
        self._next = (i + 1) % len(replicas)
        return i
