"""A fleet grid's axes: the replica count and the router (with its config).

A grid with fleet axes (``Grid.fleet``, :class:`FleetAxes`; timed grids only)
replays each cell as a fleet: N timed servers behind a router
(:func:`radix_evict.sim.fleet.replay.replay_fleet`). The axes expand after
the host point and before the policy (replicas, then router). Each cell
carries its :class:`FleetPoint` and its key gains a ``fleet`` entry
(:meth:`FleetPoint.key`); a cell of a grid without fleet axes keeps the key
it always had, so result files written before resume as they did. The
references (oracle, ceiling) stay single-server: they bound one cache.
A router is ``NAME`` or ``NAME=JSON``; its config is checked by the router
registry when the grid is made.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from radix_evict.errors import OptionError
from radix_evict.inputs import read_config_arg, split_named_config
from radix_evict.sim.sweep.keys import canonical_json
from radix_evict.sim.sweep.values import SweepValueError, parse_counts

__all__ = ["FleetAxes", "FleetPoint", "check_router", "fleet_label", "make_fleet_axes",
           "parse_router", "read_fleet_keys", "router_text"]


def router_text(router: str, config_json: str = "null") -> str:
    """``cache_aware`` or ``cache_aware {"cache_threshold":0.3}``: how tables name a router."""
    return router if config_json == "null" else f"{router} {config_json}"


def fleet_label(replicas: int, router: str, config_json: str = "null") -> str:
    """``4 replicas, cache_aware``: how messages and tables name a fleet point."""
    return f"{replicas} replica{'s' * (replicas != 1)}, {router_text(router, config_json)}"


@dataclass(frozen=True)
class FleetPoint:
    """One cell's fleet: its replica count and router (config as canonical JSON; null: defaults)."""

    replicas: int
    router: str = "round_robin"
    router_config_json: str = "null"

    @classmethod
    def of(cls, replicas: int, router: str, config: dict[str, Any] | None = None) -> FleetPoint:
        return cls(replicas, router, canonical_json(config))

    @property
    def router_config(self) -> dict[str, Any] | None:
        value = json.loads(self.router_config_json)
        return None if value is None else dict(value)

    def key(self) -> dict[str, Any]:
        """The ``fleet`` entry of a fleet cell's key."""
        return {"replicas": self.replicas, "router": self.router,
                "router_config": self.router_config}

    def spec(self, seed: int | None) -> Any:
        """The FleetSpec a cell of workload seed ``seed`` replays with (the router seeded by it)."""
        from radix_evict.sim.fleet.replay import FleetSpec

        return FleetSpec(replicas=self.replicas, router=self.router,
                         router_config=self.router_config, seed=seed or 0)

    @property
    def label(self) -> str:
        return fleet_label(self.replicas, self.router, self.router_config_json)


@dataclass(frozen=True)
class FleetAxes:
    """The fleet axes of a grid: replica counts and routers ((name, config JSON) pairs)."""

    replicas: tuple[int, ...] = (1,)
    routers: tuple[tuple[str, str], ...] = (("round_robin", "null"),)

    def points(self) -> list[FleetPoint]:
        """Every point in a fixed order (replicas, then router), each once."""
        out: dict[FleetPoint, None] = {}
        for n in self.replicas:
            for router, config in self.routers:
                out.setdefault(FleetPoint(n, router, config))
        return list(out)

    def count(self) -> int:
        return len(self.replicas) * len(self.routers)


def parse_router(value: str, what: str = "--router") -> tuple[str, dict[str, Any] | None]:
    """``NAME`` or ``NAME=JSON`` (or ``NAME=@FILE``) -> (name, config as given).

    Raises SweepValueError naming ``what`` for a value that is not one.
    """
    name, text = split_named_config(value)
    if name is None:
        if not value.strip() or value.lstrip().startswith(("{", "@", "[")):
            raise SweepValueError(f"{what} {value!r}: give a router NAME, or NAME=JSON for its "
                                  "config")
        return value.strip(), None
    try:
        raw = read_config_arg(text, what)
        config = json.loads(raw or "")
    except OptionError as exc:
        raise SweepValueError(str(exc)) from None
    except json.JSONDecodeError as exc:
        raise SweepValueError(f"{what} {name}: its config is not JSON: {exc}") from None
    if not isinstance(config, dict):
        raise SweepValueError(f"{what} {name}: its config is a JSON object, got {raw}")
    return name, config


def check_router(name: str, config: dict[str, Any] | None, what: str = "--router") -> None:
    """The router is registered and its config validates (the registry's strict checks);
    SweepValueError naming ``what`` and the router otherwise."""
    from radix_evict.sim.fleet.registry import parse_router_config

    try:
        parse_router_config(name, config)
    except Exception as exc:  # the registry's errors name the router and the key
        raise SweepValueError(f"{what} {name}: {exc}") from None


def make_fleet_axes(replicas: list[int] | None,
                    routers: list[tuple[str, dict[str, Any] | None]] | None, *,
                    timing: bool) -> FleetAxes | None:
    """The fleet axes of a grid (None: one server); SweepValueError names a bad key.

    A fleet replays timed (each replica is the timed server); each router's
    config is checked by the router registry.
    """
    if replicas is None and routers is None:
        return None
    if not timing:
        given = [k for k, v in (("--replicas", replicas), ("--router", routers)) if v]
        raise SweepValueError(f"{', '.join(given)}: a fleet replays timed; set timing "
                              "(--timing) to use them")
    counts = list(dict.fromkeys(replicas or [1]))
    if any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in counts):
        raise SweepValueError(f"--replicas: expected whole numbers >= 1, got {counts}")
    pairs = list(routers or [("round_robin", None)])
    for name, config in pairs:
        check_router(name, config, "--router")
    return FleetAxes(tuple(counts),
                     tuple(dict.fromkeys((n, canonical_json(c)) for n, c in pairs)))


def read_fleet_keys(data: Mapping[str, Any], where: str
                    ) -> tuple[list[int] | None, list[tuple[str, dict[str, Any] | None]] | None]:
    """A grid file's ``replicas`` (counts) and ``router`` (NAME or NAME=JSON strings, or a
    mapping of router -> its config); None for a key it does not have."""
    replicas = (parse_counts(data["replicas"], f"{where} replicas") if "replicas" in data
                else None)
    if "router" not in data:
        return replicas, None
    value = data["router"]
    if isinstance(value, Mapping):
        if not all(v is None or isinstance(v, Mapping) for v in value.values()):
            raise SweepValueError(f"{where} router: expected a mapping of router -> its "
                                  "config ({cache_aware: {cache_threshold: 0.5}})")
        return replicas, [(str(k), None if v is None else dict(v)) for k, v in value.items()]
    items = value if isinstance(value, list) else [value]
    if not all(isinstance(i, str) for i in items):
        raise SweepValueError(f"{where} router: expected router names, got {value!r}")
    return replicas, [parse_router(v, f"{where} router") for v in items]
