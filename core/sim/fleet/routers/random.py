"""``random``: a replica drawn uniformly per request, seeded (the same seed, the same draws)."""

from __future__ import annotations

import random
from collections.abc import Sequence

from radix_evict.sim.fleet.router import ReplicaState, RoutedRequest, Router, RouterConfig

__all__ = ["RandomConfig", "RandomRouter"]


class RandomConfig(RouterConfig):
    """No settings (the seed is the replay's)."""


class RandomRouter(Router):
    """Uniform choice from a generator seeded with the replay's seed."""

    name = "random"
    config_model = RandomConfig

    def __init__(self, config: RouterConfig, *, replicas: int, seed: int = 0) -> None:
        super().__init__(config, replicas=replicas, seed=seed)
        self._rng = random.Random(seed)

    def route(self, request: RoutedRequest, replicas: Sequence[ReplicaState]) -> int:
        return self._rng.randrange(len(replicas))
