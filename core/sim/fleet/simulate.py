"""``simulate --timing --replicas N --router R``: the fleet's options checked, its replays run.

:func:`check_fleet` turns the three options into a
:class:`~radix_evict.sim.fleet.replay.FleetSpec` before any replay (each
problem an :class:`~radix_evict.errors.OptionError` naming its option: the
router's name against the registered ones, its config strictly, key by
key); :func:`refuse_with_fleet` names what a fleet does not go with;
:func:`fleet_plan` replays each policy on the fleet and returns a
:class:`FleetReport` (its JSON document; the tables are
:mod:`radix_evict.sim.fleet.tables`').
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from radix_evict.cache.host_tier import HostTierSpec
from radix_evict.errors import OptionError
from radix_evict.inputs import read_config_arg
from radix_evict.sim.configs import PolicyRun, describe_workload
from radix_evict.sim.fleet.errors import RouterConfigError, RouterPluginError
from radix_evict.sim.fleet.figures import FleetResult
from radix_evict.sim.fleet.registry import parse_router_config
from radix_evict.sim.fleet.replay import FleetSpec, replay_fleet
from radix_evict.sim.hybrid_replay import HybridSpec
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.workloads import Workload

__all__ = ["DEFAULT_ROUTER", "FLEET_MODE", "FleetReport", "check_fleet", "fleet_plan",
           "refuse_with_fleet"]

FLEET_MODE = "fleet"
DEFAULT_ROUTER = "round_robin"
ProgressFn = Callable[[int, int], None]


class _Reporter(Protocol):
    def note(self, text: str) -> None: ...

    def progress(self, what: str) -> AbstractContextManager[ProgressFn]: ...


def check_fleet(*, replicas: int | None, router: str | None, router_config: str | None,
                timing: TimingSpec | None, seed: int) -> FleetSpec | None:
    """The fleet ``--replicas``, ``--router`` and ``--router-config`` ask for (None: no fleet)."""
    if replicas is None:
        if router is not None or router_config is not None:
            raise OptionError("--router and --router-config go with --replicas (and --timing)")
        return None
    if timing is None:
        raise OptionError("--replicas runs a fleet of timed servers: give --timing with "
                          "--replicas")
    if replicas < 1:
        raise OptionError(f"--replicas must be at least 1, got {replicas}", invalid=True)
    name = router or DEFAULT_ROUTER
    text = read_config_arg(router_config, "--router-config")
    try:
        config = parse_router_config(name, text)
    except RouterPluginError as exc:  # the environment's fault, not the user's input
        raise OptionError(f"--router {name}: {exc}") from None
    except RouterConfigError as exc:
        option = "--router-config" if exc.problems else "--router"
        raise OptionError(f"{option}: {exc}", invalid=True) from None
    return FleetSpec(replicas, name, config.model_dump(exclude_unset=True), seed)


def refuse_with_fleet(*, single: bool, oracle: bool, metrics: bool) -> None:
    """What a fleet replay does not go with, each refused saying why."""
    if not single:
        raise OptionError("--replicas replays one workload or one trace (no 'all' or A,B)")
    if oracle:
        raise OptionError("--oracle has no fleet form: give --replicas or --oracle")
    if metrics:
        raise OptionError("--enable-metrics writes one cache's counters: not with --replicas")


@dataclass(frozen=True)
class FleetReport:
    """Each policy's fleet replay of one workload (``results`` in the policies' order)."""

    workload: Workload
    results: list[FleetResult]
    fleet: FleetSpec
    timing: TimingSpec
    host: HostTierSpec | None
    seed: int
    page_size: int
    pool_tokens: int
    wall_s: float
    hybrid: HybridSpec | None = None  # each replica on this hybrid model's cache

    @property
    def title(self) -> str:
        return f"{self.workload.name}: {self.fleet.replicas} replicas behind {self.fleet.router}"

    def wall_note(self) -> str:
        return (f"wall time {self.wall_s:.2f} s for {len(self.results)} fleet replays of "
                f"{self.workload.num_requests:,} requests")

    def to_json(self) -> dict[str, Any]:
        return {"mode": FLEET_MODE, "workload": describe_workload(self.workload),
                **({} if self.hybrid is None else _model_json(self.hybrid)),
                "seed": self.seed, "page_size": self.page_size,
                "pool_tokens_per_replica": self.pool_tokens, "fleet": self.fleet.describe(),
                "timing": self.timing.describe(),
                "host_tokens_per_replica": (None if self.host is None
                                            else self.host.size_for(self.pool_tokens,
                                                                    self.page_size)),
                "results": [r.to_json() for r in self.results], "total_wall_s": self.wall_s}


def _model_json(spec: HybridSpec) -> dict[str, Any]:
    """A hybrid fleet's model: the layout and the pools each replica's KV memory bought."""
    lay = spec.layout
    return {"model_arch": lay.name, "kind": lay.kind, "window": lay.window,
            "kv_bytes": spec.kv_bytes, "pools": asdict(spec.pools)}


def fleet_plan(runs: Sequence[PolicyRun], workload: Workload, *, fleet: FleetSpec,
               timing: TimingSpec, host: HostTierSpec | None, pool_tokens: int | None,
               page_size: int, seed: int, reporter: _Reporter,
               hybrid: HybridSpec | None = None) -> FleetReport:
    """Each policy's replay on the fleet, one after another (each fleet is one process's);
    with ``hybrid``, each replica on that hybrid model's cache (``sim.fleet.hybrid``)."""
    from radix_evict.sim.fleet.hybrid import replay_hybrid_fleet

    pool = (hybrid.pools.full_tokens if hybrid is not None
            else workload.default_pool_tokens if pool_tokens is None else pool_tokens)
    reporter.note(f"workload {workload.name}: {workload.num_requests:,} requests on "
                  f"{fleet.replicas} replicas behind {fleet.router}; pool {pool:,} tokens "
                  f"per replica, page {page_size}; policies {', '.join(r.name for r in runs)}")
    t0 = time.perf_counter()
    results = []
    for run in runs:
        with reporter.progress(f"{run.name} on {fleet.replicas} replicas") as prog:
            results.append(
                replay_fleet(workload, run, pool_tokens=pool, page_size=page_size, timing=timing,
                             fleet=fleet, host=host, progress=prog) if hybrid is None else
                replay_hybrid_fleet(workload, run, hybrid, timing=timing, fleet=fleet,
                                    host=host, progress=prog))
    return FleetReport(workload, results, fleet, timing, host, seed, page_size, pool,
                       time.perf_counter() - t0, hybrid)
