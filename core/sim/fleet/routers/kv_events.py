"""NVIDIA Dynamo KV router's cost over the replicas' real caches (stub: the algorithm follows)."""

from __future__ import annotations

from collections.abc import Sequence

from radix_evict.sim.fleet.router import ReplicaState, RoutedRequest, Router, RouterConfig

__all__ = ["KvEventsConfig", "KvEventsRouter"]


class KvEventsConfig(RouterConfig):
    """The ``kv_events`` router's settings (Dynamo's defaults)."""


class KvEventsRouter(Router):
    """Routes on each replica's cached prefix and load."""

    name = "kv_events"
    config_model = KvEventsConfig

    def route(self, request: RoutedRequest, replicas: Sequence[ReplicaState]) -> int:
        raise NotImplementedError("kv_events: not written yet")
