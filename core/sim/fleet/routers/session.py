"""``session``: every request of a session (conversation) to the replica its first one went to.

A session's first request goes to the least-loaded replica, as does any
request without a session; a session keeps its replica to its end (its
cache holds the conversation so far: sticky routing is what keeps it hit).
"""

from __future__ import annotations

from collections.abc import Sequence

from radix_evict.sim.fleet.router import ReplicaState, RoutedRequest, Router, RouterConfig
from radix_evict.sim.fleet.routers.least_load import least_loaded

__all__ = ["SessionConfig", "SessionRouter"]


class SessionConfig(RouterConfig):
    """No settings."""


class SessionRouter(Router):
    """Sticky by session; least_load for a session's first request and for none."""

    name = "session"
    config_model = SessionConfig

    def __init__(self, config: RouterConfig, *, replicas: int, seed: int = 0) -> None:
        super().__init__(config, replicas=replicas, seed=seed)
        self._home: dict[int | str, int] = {}

    def route(self, request: RoutedRequest, replicas: Sequence[ReplicaState]) -> int:
        key = request.session
        if key is None:
            return least_loaded(replicas)
        home = self._home.get(key)
        if home is None:
            home = self._home[key] = least_loaded(replicas)
        return home
