"""``least_load``: the replica with the fewest requests in flight (the lowest index on a tie)."""

from __future__ import annotations

from collections.abc import Sequence

from radix_evict.sim.fleet.router import ReplicaState, RoutedRequest, Router, RouterConfig

__all__ = ["LeastLoadConfig", "LeastLoadRouter", "least_loaded"]


class LeastLoadConfig(RouterConfig):
    """No settings."""


def least_loaded(replicas: Sequence[ReplicaState]) -> int:
    """The index of the replica with the fewest in flight, the first of equals."""
    best, best_load = 0, replicas[0].in_flight
    for r in replicas[1:]:
        load = r.in_flight
        if load < best_load:
            best, best_load = r.index, load
    return best


class LeastLoadRouter(Router):
    """Fewest in flight: the router's own count of requests sent and not yet answered."""

    name = "least_load"
    config_model = LeastLoadConfig

    def route(self, request: RoutedRequest, replicas: Sequence[ReplicaState]) -> int:
        return least_loaded(replicas)
