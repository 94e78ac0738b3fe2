"""A sweep grid: policy x config x pool size x page size x workload x seed, and its cells.

A :class:`Grid` holds the axes; :meth:`Grid.cells` expands them in a fixed
order (workload, seed, policy, config, page size, pool size), so a grid
always lists its cells the same way. With ``references`` a grid also holds
Belady's offline oracle at every pool size and the infinite-pool ceiling
(reference lines for the curves, not policies to choose).

The grid's parts have a module each: ``cell`` (a cell, its source and its
key), ``keys`` (one spelling per value in a key), ``timing_axes`` (a timed
grid's axes), ``host_axes`` (a host tier's axes), ``fleet_axes`` (replicas
and routers: a fleet's axes); ``spec`` and ``values``
parse what a user wrote into a grid, and ``check`` validates its cells. The
names they define are importable from here too.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from radix_evict.cache.host_tier import HostTierSpec
from radix_evict.sim.host import tier_at
from radix_evict.sim.oracle import ORACLE
from radix_evict.sim.sweep.cell import (
    CEILING,
    REFERENCES,
    Cell,
    Source,
    SourceKind,
    Spot,
    describe_cell,
    page_pool,
)
from radix_evict.sim.sweep.fleet_axes import FleetAxes, FleetPoint
from radix_evict.sim.sweep.host_axes import (
    DEVICE_POLICY,
    HostAxes,
    HostPoint,
    host_key,
    host_label,
    host_line,
    write_threshold_of,
)
from radix_evict.sim.sweep.hybrid_axes import HybridAxes, HybridPoint
from radix_evict.sim.sweep.keys import canonical_json, cost_model_key
from radix_evict.sim.sweep.timing_axes import TimingAxes, TimingPoint, timing_label

# The grid's own names, and those of its parts' modules, importable from here as before.
__all__ = [
    "CEILING", "DEVICE_POLICY", "ORACLE", "REFERENCES", "Cell", "FleetAxes", "FleetPoint", "Grid",
    "HostAxes", "HostPoint",
    "PolicyAxes", "Source", "SourceKind", "Spot", "TimingAxes", "TimingPoint", "canonical_json",
    "cost_model_key", "describe_cell", "host_label", "host_line", "page_pool", "timing_label",
    "write_threshold_of",
]


@dataclass(frozen=True)
class PolicyAxes:
    """One policy and the values to try for each of its config keys (no keys: one run)."""

    policy: str
    keys: tuple[tuple[str, tuple[Any, ...]], ...] = ()

    @classmethod
    def of(cls, policy: str, keys: Mapping[str, Sequence[Any]] | None = None) -> PolicyAxes:
        return cls(policy, tuple((k, tuple(v)) for k, v in (keys or {}).items()))

    def configs(self) -> list[dict[str, Any] | None]:
        """Every combination of the key values; ``[None]`` when no key varies."""
        if not self.keys:
            return [None]
        names = [k for k, _ in self.keys]
        return [dict(zip(names, combo, strict=True))
                for combo in itertools.product(*(v for _, v in self.keys))]


@dataclass(frozen=True)
class Grid:
    """The axes of a sweep. ``pool_tokens`` None means each workload's default pool."""

    policies: tuple[PolicyAxes, ...]
    sources: tuple[Source, ...]
    pool_tokens: tuple[int | None, ...] = (None,)
    page_sizes: tuple[int, ...] = (1,)
    seeds: tuple[int, ...] = (0,)
    references: bool = False
    timing: TimingAxes | None = None  # a timed grid: every cell runs the timed replay
    hidden: bool = False  # accept registered policies that are not --policy choices (fifo, mru)
    host: HostAxes | None = None  # a host tier (HiCache): its sizes, write and host policies
    fleet: FleetAxes | None = None  # replicas behind a router (timed grids): counts, routers
    hybrid: HybridAxes | None = None  # a hybrid model's cache: architectures, budgets, splits

    def count(self) -> int:
        """How many cells the axes multiply to, before any duplicate is dropped (no expansion)."""
        configs = sum(math.prod(len(v) for _, v in a.keys) for a in self.policies)
        runs = sum(len(self.seeds) if s.seeded else 1 for s in self.sources)
        points = self.timing.count() if self.timing is not None else 1
        hosts = self.host.count() if self.host is not None else 1
        fleets = self.fleet.count() if self.fleet is not None else 1
        fleets *= self.hybrid.count() if self.hybrid is not None else 1
        per_point = configs * len(self.page_sizes) * len(self.pool_tokens) * hosts * fleets
        if self.references:  # the oracle at every pool size, the ceiling per page size
            per_point += len(self.page_sizes) * (len(self.pool_tokens) + 1)
        return runs * points * per_point

    def spots(self) -> list[Spot]:
        """Every cell's coordinates in a fixed order, pools rounded to whole pages.

        A value listed twice, or two pool sizes that round to the same pages,
        give one spot.
        """
        out: dict[Spot, None] = {}
        points: list[TimingPoint | None] = (
            [None] if self.timing is None else list(self.timing.points()))
        hosts: list[HostTierSpec | None] = [None] if self.host is None else self.host.points()
        fleets: list[FleetPoint | None] = (
            [None] if self.fleet is None else [p for p in self.fleet.points()])
        models: list[HybridPoint | None] = (
            [None] if self.hybrid is None else [p for p in self.hybrid.points()])
        for source in self.sources:
            seeds: Iterable[int | None] = self.seeds if source.seeded else (None,)
            for seed in seeds:
                for point in points:
                    for host, fleet, model in itertools.product(hosts, fleets, models):
                        for axes in self.policies:
                            for config in axes.configs():
                                text = canonical_json(config)
                                for page in self.page_sizes:
                                    tier = tier_at(host, page)
                                    for pool in self.pool_tokens:
                                        out.setdefault(Spot(
                                            axes.policy, text, page_pool(pool, page), page,
                                            source, seed, config, point, tier, fleet,
                                            model))
                    if self.references:  # one-tier (the ceiling is the two-tier bound too)
                        for page in self.page_sizes:
                            for pool in self.pool_tokens:
                                out.setdefault(Spot(ORACLE, "null", page_pool(pool, page), page,
                                                    source, seed, None, point))
                            # timed, the ceiling is the timed replay's own (the same
                            # arrivals and scheduler, a pool that never fills)
                            out.setdefault(Spot(CEILING, "null", None, page, source, seed,
                                                None, point))
        return list(out)

    def cells(self) -> list[Cell]:
        """Every cell with its validated config, in a fixed order, each cell once.

        Each distinct (policy, config) is validated once (``registry.parse_config``);
        cells whose configs validate to the same object are one cell. A policy
        must be a ``--policy`` choice, or with ``hidden`` any registered one. Raises
        :class:`~radix_evict.sim.sweep.check.SweepGridError` naming the cells
        whose config is bad.
        """
        from radix_evict.sim.sweep.check import parse_configs
        from radix_evict.sim.sweep.fingerprints import cell_inputs, input_files

        spots = self.spots()
        configs = parse_configs(spots, extended=self.hidden)
        digests: dict[tuple[Source, str, str], dict[str, str]] = {}
        out: dict[str, Cell] = {}
        for s in spots:
            config = configs[s.policy, s.config_json]
            at = (s.source, s.policy, s.config_json)
            if at not in digests:
                trace = s.source.name if s.source.kind == "trace" else None
                digests[at] = cell_inputs(input_files(trace, config))
            cell = Cell(s.policy, config, s.pool_tokens, s.page_size, s.source, s.seed,
                        s.timing, s.host, digests[at], s.fleet, s.hybrid)
            out.setdefault(cell.key, cell)
        return list(out.values())

    def size_text(self, cells: Sequence[Cell] | None = None) -> str:
        """``5 policy configs x 3 pool sizes x 2 workloads x 1 seed``: what multiplies.

        Given the expanded ``cells``, configs and pool sizes are counted as they
        ran (after validation and rounding to pages), not as listed.
        """
        configs = sum(len(a.configs()) for a in self.policies)
        pools = len(self.pool_tokens)
        if cells is not None:
            runs = [c for c in cells if not c.is_reference]
            configs = len({(c.policy, c.config_json) for c in runs}) or configs
            pools = max((len({c.pool_tokens for c in runs if c.page_size == p})
                         for p in self.page_sizes), default=pools) or pools
        parts = [_count(configs, "policy config"), _count(pools, "pool size")]
        if len(self.page_sizes) > 1:
            parts.append(_count(len(self.page_sizes), "page size"))
        parts.append(_count(len(self.sources), "workload"))
        if any(s.seeded for s in self.sources):
            parts.append(_count(len(self.seeds), "seed"))
        if self.timing is not None:
            t = self.timing
            if cells is not None:
                points = {c.timing for c in cells if c.timing is not None}
                models = len({p.cost_model.name for p in points}) or len(t.cost_models)
                running = len({p.max_running for p in points}) or len(t.max_running)
                rates = len({p.key()["rate"] for p in points}) or len(t.rates)
            else:
                models, running, rates = len(t.cost_models), len(t.max_running), len(t.rates)
            if t.max_running != (None,):
                parts.append(_count(running, "max-running value"))
            if t.rates != (None,):
                parts.append(_count(rates, "rate"))
            parts.append(_count(models, "cost model"))
        if self.host is not None:
            parts.extend(self._host_sizes(cells))
        if self.fleet is not None:
            parts += [_count(len(self.fleet.replicas), "replica count"),
                      _count(len(self.fleet.routers), "router")]
        if self.hybrid is not None:
            parts.append(_count(self.hybrid.count(), "model split"))
        return " x ".join(parts)

    def _host_sizes(self, cells: Sequence[Cell] | None) -> list[str]:
        """``4 host sizes x 2 write policies``: the host axes, as listed or as they ran."""
        h = self.host
        assert h is not None
        sizes, writes, policies = (len(h.tokens) + len(h.ratios), len(h.write_policies),
                                   len(h.policies))
        if cells is not None:
            runs = [c for c in cells if not c.is_reference]
            tiers = [c.host for c in runs if c.host is not None]
            if tiers:
                none = any(c.host is None for c in runs)  # a size of 0 (or under a page)
                keys = [host_key(t) for t in tiers]
                sizes = len({(k["tokens"], k["ratio"]) for k in keys}) + none
                writes = len({k["write_policy"] for k in keys})
                policies = len({(k["policy"], canonical_json(k["config"])) for k in keys})
        parts = [_count(sizes, "host size"), _count(writes, "write policy")]
        if len(h.policies) > 1:
            parts.append(_count(policies, "host policy"))
        if h.admissions != (None,):
            parts.append(_count(len(h.admissions), "admission policy"))
        return parts


def _count(n: int, noun: str) -> str:
    if n == 1:
        return f"{n} {noun}"
    return f"{n} {noun[:-1]}ies" if noun.endswith("cy") else f"{n} {noun}s"
