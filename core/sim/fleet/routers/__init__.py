"""The built-in routers, registered through entry point ``builtin`` of group
``radix_evict.routers`` like any router package: ``round_robin``, ``random``
(seeded), ``least_load``, ``session``, ``cache_aware`` (sglang-router's) and
``kv_events`` (Dynamo's KV router's cost)."""

from __future__ import annotations

from collections.abc import Callable

from radix_evict.sim.fleet.hookspecs import hookimpl
from radix_evict.sim.fleet.router import Router, RouterSpec
from radix_evict.sim.fleet.routers.cache_aware import CacheAwareRouter
from radix_evict.sim.fleet.routers.kv_events import KvEventsRouter
from radix_evict.sim.fleet.routers.least_load import LeastLoadRouter
from radix_evict.sim.fleet.routers.random import RandomRouter
from radix_evict.sim.fleet.routers.round_robin import RoundRobinRouter
from radix_evict.sim.fleet.routers.session import SessionRouter

__all__ = ["BUILTIN_ROUTERS", "radix_evict_register_routers"]

BUILTIN_ROUTERS: tuple[type[Router], ...] = (
    RoundRobinRouter, RandomRouter, LeastLoadRouter, SessionRouter, CacheAwareRouter,
    KvEventsRouter,
)


def _summary(cls: type[Router]) -> str:
    """The first line of the router's module docstring, or of its class's."""
    import sys

    doc = sys.modules[cls.__module__].__doc__ or cls.__doc__ or cls.name
    line = doc.strip().splitlines()[0].strip()
    return line.removeprefix(f"``{cls.name}``: ")


@hookimpl
def radix_evict_register_routers(register: Callable[[RouterSpec], None]) -> None:
    """Register the six built-in routers."""
    for cls in BUILTIN_ROUTERS:
        register(RouterSpec(cls.name, cls, cls.config_model, _summary(cls)))
