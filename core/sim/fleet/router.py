"""The router contract: what a fleet replay asks a router, and what a router may read.

A fleet replay (:func:`radix_evict.sim.fleet.replay.replay_fleet`) asks its
router once per request, as the request arrives: :meth:`Router.route` gets the
request (:class:`RoutedRequest`) and a read-only view of every replica
(:class:`ReplicaState`) and returns a replica's index; :meth:`Router.on_finish`
is told when each request it routed has finished. A router may keep state of
its own between calls (sglang-router's approximate tree) but must not change
a replica. A router that raises, or returns an index out of range, fails the
replay with :class:`~radix_evict.sim.fleet.errors.FleetRouterError` naming it.

Routers are a second plugin kind beside policies: entry point group
``radix_evict.routers``, pluggy hook ``radix_evict_register_routers(register)``;
the built-ins (``round_robin``, ``random``, ``least_load``, ``session``,
``cache_aware``, ``kv_events``) register through entry point ``builtin =
"radix_evict.sim.fleet.routers"`` exactly like a third-party package.
"""

from __future__ import annotations

import abc
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

from pydantic import BaseModel, ConfigDict

__all__ = ["ReplicaState", "RoutedRequest", "Router", "RouterConfig", "RouterSpec"]


class RouterConfig(BaseModel):
    """Base of every router's config: strict as a policy's (unknown keys are errors)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


@dataclass(frozen=True, slots=True)
class RoutedRequest:
    """One request as the router sees it when it arrives."""

    rid: int  # index in the workload (0-based, arrival order)
    arrival: float  # virtual seconds
    # what prefix matching runs on: token ids in a replay; a str in the sglang-router harness
    key: Sequence[Hashable]
    session: int | str | None  # conversation/session id when the workload has one
    prompt_tokens: int
    output_tokens: int


class ReplicaState(Protocol):
    """A read-only view of one replica at the moment of routing."""

    @property
    def index(self) -> int: ...

    @property
    def in_flight(self) -> int:
        """Requests routed to it and not finished (sglang-router's per-worker load)."""

    @property
    def waiting(self) -> int:
        """Requests queued, not yet admitted."""

    @property
    def running(self) -> int: ...

    @property
    def pending_prefill_tokens(self) -> int:
        """Uncached prompt tokens of its queued requests (Dynamo's prefill load)."""

    @property
    def active_kv_tokens(self) -> int:
        """KV tokens held by its running requests (Dynamo's decode load)."""

    def cached_prefix(self, key: Sequence[Hashable]) -> int:
        """Tokens of ``key``'s prefix in its device cache now; no side effects."""


class Router(abc.ABC):
    """Chooses a replica for each request; may keep its own state (sglang-router's tree)."""

    name: ClassVar[str]
    config_model: ClassVar[type[RouterConfig]]

    def __init__(self, config: RouterConfig, *, replicas: int, seed: int = 0) -> None:
        self.config = config
        self.replicas = replicas
        self.seed = seed

    @abc.abstractmethod
    def route(self, request: RoutedRequest, replicas: Sequence[ReplicaState]) -> int:
        """The index of the replica that serves ``request`` (0 <= i < len(replicas))."""

    def on_finish(self, request: RoutedRequest, replica: int) -> None:  # noqa: B027
        """``request`` has finished on ``replica`` (its response completed). Default: nothing."""


@dataclass(frozen=True)
class RouterSpec:
    """What a router plugin registers."""

    name: str
    router_class: type[Router]
    config_model: type[RouterConfig]
    summary: str
