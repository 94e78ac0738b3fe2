"""A sweep grid and its cells: policy x config x pool size x page size x workload x seed.

A :class:`Grid` holds the axes; :meth:`Grid.cells` expands them in a fixed
order (workload, seed, policy, config, page size, pool size), so a grid
always lists its cells the same way. With ``references`` a grid also holds
Belady's offline oracle at every pool size and the infinite-pool ceiling
(reference lines for the curves, not policies to choose). A :class:`Cell` is one replay; its
:attr:`Cell.key` names it in result files, which is how a rerun finds the
cells it already has.

A timed grid (``Grid.timing``, :class:`TimingAxes`) replays every cell
through the timed replay (:mod:`radix_evict.sim.timed`) and adds three axes:
max running requests, arrival rate and cost model, expanded between the seed
and the policy (cost model, max running, rate). Each cell carries its
:class:`TimingPoint`, and its key gains a ``timing`` entry (the point, the
cost model's name and coefficients, and the options shared by every cell);
an untimed cell's key is what it always was. A timed grid's ceiling is the
timed replay's (the same arrivals and scheduler with a pool that never
fills: a running request's prompt is visible once prefilled, so timed hit
rates can pass the token replay's ceiling): one cell per timing point too.

A grid with a host tier (``Grid.host``, :class:`HostAxes`: SGLang's HiCache,
:mod:`radix_evict.cache.host_tier`) adds three more axes: the host tier's
size (tokens, or SGLang's ``--hicache-ratio``), the write policy and the host
policy, expanded after the timing point and before the policy. Each cell
carries its :class:`HostPoint` and its key gains a ``host`` entry; a host
size of 0 (or less than a page) is no host tier, and that cell's key is the
one-tier cell's, as it always was. The references (oracle, ceiling) stay
one-tier, one per pool size: the ceiling is also the two-tier bound (Belady
on the device with an unbounded host tier serves every prefix seen before,
docs/hicache.md §12), whatever the host size.

A cell that reads files (a trace, a weights file its config names) holds
their content digests in its key (``inputs``,
:mod:`radix_evict.sim.sweep.fingerprints`): a file changed in place is new
cells, not a resume of the old ones.
"""

from __future__ import annotations

import itertools
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Literal

from radix_evict.cache.host_tier import (
    DEFAULT_WRITE_POLICY,
    WRITE_BACK,
    WRITE_THRESHOLDS,
    HostTierSpec,
)
from radix_evict.policies.contract import PolicyConfig
from radix_evict.sim.configs import config_dict
from radix_evict.sim.oracle import ORACLE
from radix_evict.sim.timed.arrivals import ArrivalSpec
from radix_evict.sim.timed.cost import CostModel
from radix_evict.sim.timed.server import SchedulerSpec
from radix_evict.sim.timed.spec import TimingSpec

CEILING = "ceiling"  # the infinite-pool ceiling: one cell per workload, seed and page size
REFERENCES = (ORACLE, CEILING)  # reference lines a grid may add; not policies
SourceKind = Literal["workload", "trace"]


def canonical_json(value: Any) -> str:
    """One spelling per value (sorted keys, no spaces): equal configs give equal keys."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


@dataclass(frozen=True)
class Source:
    """Where a cell's requests come from: a built-in workload with its parameters, or a trace.

    A trace is named by its path as given (normalised), so a rerun from the same
    directory finds its cells again.
    """

    kind: SourceKind
    name: str
    params_json: str = "{}"

    @classmethod
    def workload(cls, name: str, params: Mapping[str, Any] | None = None) -> Source:
        return cls("workload", name, canonical_json(dict(params or {})))

    @classmethod
    def trace(cls, path: str | os.PathLike[str], params: Mapping[str, Any] | None = None
              ) -> Source:
        return cls("trace", os.path.normpath(os.fspath(path)), canonical_json(dict(params or {})))

    @property
    def params(self) -> dict[str, Any]:
        return dict(json.loads(self.params_json))

    @property
    def seeded(self) -> bool:
        """Built-in workloads are generated from a seed; a trace is the same for every seed."""
        return self.kind == "workload"

    @property
    def label(self) -> str:
        """``chat``, ``chat{"convs":50}`` or the trace's path: how tables name it."""
        return self.name if self.params_json == "{}" else f"{self.name}{self.params_json}"


def cost_model_key(model: CostModel) -> dict[str, Any]:
    """A cost model's identity in cell keys: its name and coefficients (not its ``source``).

    A file whose numbers changed is another model, so its cells are other cells.
    """
    return dict(model.model_dump(exclude={"source"}))


def _num(value: float | None) -> float | None:
    """One spelling for a number in a key: ``2`` and ``2.0`` are the same rate."""
    return None if value is None else float(value)


_DEFAULT_CHUNK = SchedulerSpec().chunked_prefill_size


@dataclass(frozen=True, eq=False)
class TimingPoint:
    """One timed cell's timing: its point on the timing axes and the options every cell shares.

    ``max_running`` None is SGLang's default for the cell's pool; ``rate`` None
    replays the workload's own arrival times (or, with ``concurrency``, a
    closed loop). Two points are equal when their :meth:`key` is.
    """

    max_running: int | None
    rate: float | None
    cost_model: CostModel
    concurrency: int | None = None
    time_scale: float = 1.0
    slo_ttft_ms: float | None = None
    slo_tpot_ms: float | None = None
    chunked_prefill_size: int = _DEFAULT_CHUNK

    def key(self) -> dict[str, Any]:
        """The ``timing`` entry of a timed cell's key (JSON types, numbers spelled one way)."""
        return {
            "max_running": self.max_running, "rate": _num(self.rate),
            "cost_model": cost_model_key(self.cost_model), "concurrency": self.concurrency,
            "time_scale": float(self.time_scale), "slo_ttft_ms": _num(self.slo_ttft_ms),
            "slo_tpot_ms": _num(self.slo_tpot_ms),
            "chunked_prefill_size": self.chunked_prefill_size,
        }

    @cached_property
    def key_json(self) -> str:
        """:meth:`key` as canonical JSON: the point's identity (computed once)."""
        return canonical_json(self.key())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TimingPoint) and other.key_json == self.key_json

    def __hash__(self) -> int:
        return hash(self.key_json)

    def spec(self, seed: int | None) -> TimingSpec:
        """The TimingSpec a cell of workload seed ``seed`` replays with (arrivals seeded by it).

        Raises ValueError (from the timed replay's own checks) for values it refuses.
        """
        sched: dict[str, Any] = {"chunked_prefill_size": self.chunked_prefill_size}
        if self.max_running is not None:
            sched["max_running"] = self.max_running
        return TimingSpec(
            cost_model=self.cost_model,
            arrivals=ArrivalSpec(rate=_num(self.rate), concurrency=self.concurrency,
                                 time_scale=float(self.time_scale), seed=seed or 0),
            scheduler=SchedulerSpec(**sched),
            slo_ttft_ms=_num(self.slo_ttft_ms),
            slo_tpot_ms=_num(self.slo_tpot_ms),
        )

    @property
    def label(self) -> str:
        """``llama3-8b-h100, max running 64, rate 2/s``: the axes, as tables name a point."""
        return timing_label(self.cost_model.name, self.max_running, self.rate)


def timing_label(cost_model: str, max_running: int | None, rate: float | None) -> str:
    """How messages and tables name a timing point (the axes left at their default omitted)."""
    parts = [cost_model]
    if max_running is not None:
        parts.append(f"max running {max_running}")
    if rate is not None:
        parts.append(f"rate {rate:g}/s")
    return ", ".join(parts)


@dataclass(frozen=True)
class TimingAxes:
    """The timing axes of a timed grid, and the options every timed cell shares.

    ``max_running`` and ``rates`` hold None for "not varied" (SGLang's default;
    the workload's own arrivals). :meth:`points` lists them cost model first,
    then max running, then rate.
    """

    cost_models: tuple[CostModel, ...]
    max_running: tuple[int | None, ...] = (None,)
    rates: tuple[float | None, ...] = (None,)
    concurrency: int | None = None
    time_scale: float = 1.0
    slo_ttft_ms: float | None = None
    slo_tpot_ms: float | None = None
    chunked_prefill_size: int = _DEFAULT_CHUNK

    def points(self) -> list[TimingPoint]:
        """Every point in a fixed order, each once (``2`` and ``2.0`` are one rate)."""
        out: dict[TimingPoint, None] = {}
        for model in self.cost_models:
            for running in self.max_running:
                for rate in self.rates:
                    out.setdefault(TimingPoint(
                        running, rate, model, self.concurrency, self.time_scale,
                        self.slo_ttft_ms, self.slo_tpot_ms, self.chunked_prefill_size))
        return list(out)

    def count(self) -> int:
        """Points before duplicates are dropped (what the axes multiply to)."""
        return len(self.cost_models) * len(self.max_running) * len(self.rates)


DEVICE_POLICY = "device"  # a host policy axis value: the device policy ranks host leaves


def write_threshold_of(write_policy: str, write_threshold: int | None) -> int:
    """The insert count that backs a node up: ``write_threshold`` or the write policy's own.

    0 for ``write_back`` (it writes on device eviction, never on insert).
    """
    if write_policy == WRITE_BACK:
        return 0
    return write_threshold if write_threshold is not None else WRITE_THRESHOLDS[write_policy]


@dataclass(frozen=True, eq=False)
class HostPoint:
    """One cell's host tier: its size, write policy and host policy (SGLang's HiCache).

    ``tokens`` (whole pages of the cell's page size, above 0) or ``ratio``
    (SGLang's ``--hicache-ratio``: sized from the cell's pool) gives the size;
    ``write_threshold`` None is the write policy's own; ``policy`` None is the
    device policy (SGLang's way), else a registered policy with its validated
    ``policy_config`` (None: its defaults). Two points are equal when their
    :meth:`key` is: a threshold given equal to the write policy's own is the
    same point.
    """

    tokens: int | None = None
    ratio: float | None = None
    write_policy: str = DEFAULT_WRITE_POLICY
    write_threshold: int | None = None
    policy: str | None = None
    policy_config: PolicyConfig | None = None

    @property
    def threshold(self) -> int:
        """The insert count that backs a node up (0: write_back, on device eviction)."""
        return write_threshold_of(self.write_policy, self.write_threshold)

    @property
    def config_dict(self) -> dict[str, Any] | None:
        """The host policy's config as JSON types (None: none given)."""
        return None if self.policy_config is None else config_dict(self.policy_config)

    def key(self) -> dict[str, Any]:
        """The ``host`` entry of a cell's key (JSON types, numbers spelled one way)."""
        return {"tokens": self.tokens, "ratio": _num(self.ratio),
                "write_policy": self.write_policy, "write_threshold": self.threshold,
                "policy": self.policy, "config": self.config_dict}

    @cached_property
    def key_json(self) -> str:
        """:meth:`key` as canonical JSON: the point's identity (computed once)."""
        return canonical_json(self.key())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HostPoint) and other.key_json == self.key_json

    def __hash__(self) -> int:
        return hash(self.key_json)

    def spec(self) -> HostTierSpec:
        """The HostTierSpec a cell replays with; ValueError (its own checks) for bad values."""
        return HostTierSpec(tokens=self.tokens, ratio=self.ratio, write_policy=self.write_policy,
                            write_threshold=self.write_threshold, policy=self.policy,
                            policy_config=self.policy_config)

    def at_page(self, page_size: int) -> HostPoint | None:
        """The point a cell of ``page_size`` gets: tokens in whole pages; None under a page."""
        if self.tokens is None or page_size < 1:
            return self
        tokens = self.tokens // page_size * page_size
        if tokens <= 0:
            return None
        return self if tokens == self.tokens else replace(self, tokens=tokens)

    @property
    def label(self) -> str:
        """``host 1,000,000 tokens, write_back``: how messages and tables name the point."""
        cfg = self.config_dict
        return host_label(self.tokens, self.ratio, self.write_policy, self.threshold,
                          self.policy, None if cfg is None else canonical_json(cfg))


def host_line(write_policy: str, threshold: int | None, policy: str | None,
              config_json: str | None = None) -> str:
    """A host point without its size: ``write_back``, ``write_through, host policy lfu``.

    The threshold is named where it is not the write policy's own.
    """
    parts = [write_policy]
    if threshold is not None and threshold != write_threshold_of(write_policy, None):
        parts.append(f"threshold {threshold}")
    if policy is not None:
        cfg = "" if config_json in (None, "null") else f" {config_json}"
        parts.append(f"host policy {policy}{cfg}")
    return ", ".join(parts)


def host_label(tokens: int | None, ratio: float | None, write_policy: str,
               threshold: int | None, policy: str | None, config_json: str | None = None
               ) -> str:
    """How messages and tables name a host point: its size, then :func:`host_line`."""
    size = f"hicache ratio {ratio:g}" if ratio is not None else f"host {tokens or 0:,} tokens"
    return f"{size}, {host_line(write_policy, threshold, policy, config_json)}"


@dataclass(frozen=True)
class HostAxes:
    """The host-tier axes of a grid: sizes (tokens or ratios), write policies, host policies.

    A size of 0 tokens is no host tier (:meth:`points` gives None for it).
    ``policies`` pairs each host policy (None: the device policy) with its
    validated config. ``write_threshold`` applies to the write-through
    policies (``write_back`` writes on device eviction). :meth:`points` lists
    size first, then write policy, then host policy.
    """

    tokens: tuple[int, ...] = ()
    ratios: tuple[float, ...] = ()
    write_policies: tuple[str, ...] = (DEFAULT_WRITE_POLICY,)
    policies: tuple[tuple[str | None, PolicyConfig | None], ...] = ((None, None),)
    write_threshold: int | None = None

    def points(self) -> list[HostPoint | None]:
        """Every point in a fixed order, each once; None for no host tier (0 tokens).

        Raises ValueError (``HostTierSpec``'s own checks) for a point the replay refuses.
        """
        sizes: list[tuple[int | None, float | None]] = (
            [(t, None) for t in self.tokens] + [(None, float(r)) for r in self.ratios])
        out: dict[HostPoint | None, None] = {}
        for tokens, ratio in sizes:
            for write in self.write_policies:
                threshold = None if write == WRITE_BACK else self.write_threshold
                for policy, config in self.policies:
                    if tokens == 0:
                        out.setdefault(None)
                        continue
                    point = HostPoint(tokens, ratio, write, threshold, policy, config)
                    point.spec()  # checked before it is hashed (its key reads its threshold)
                    out.setdefault(point)
        return list(out)

    def count(self) -> int:
        """Points before duplicates are dropped (what the axes multiply to)."""
        return ((len(self.tokens) + len(self.ratios)) * len(self.write_policies)
                * len(self.policies))


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


class Cell:
    """One replay of the grid, carrying its policy's validated, frozen config.

    ``config`` None means the policy's defaults (or, for a policy whose spec
    derives a config, the one derived from each cell's workload). Two cells
    are the same cell when their :attr:`key` is: that is how a grid drops
    duplicates and how a rerun finds the cells a result file already has.
    """

    __slots__ = (
        "config",
        "config_json",
        "host",
        "inputs",
        "key",
        "page_size",
        "policy",
        "pool_tokens",
        "seed",
        "source",
        "timing",
    )

    def __init__(self, policy: str, config: PolicyConfig | None, pool_tokens: int | None,
                 page_size: int, source: Source, seed: int | None,
                 timing: TimingPoint | None = None, host: HostPoint | None = None,
                 inputs: Mapping[str, str] | None = None) -> None:
        self.policy = policy
        self.config = config
        self.pool_tokens = pool_tokens
        self.page_size = page_size
        self.source = source
        self.seed = seed
        self.timing = timing
        self.host = host
        self.inputs = dict(inputs or {})  # entry name -> the file's digest
        cfg = None if config is None else config_dict(config)
        self.config_json = canonical_json(cfg)
        coordinates: dict[str, Any] = {
            "policy": policy, "config": cfg, "pool_tokens": pool_tokens,
            "page_size": page_size, "workload": source.name, "params": source.params,
            "seed": seed,
        }
        if timing is not None:  # an untimed cell's key stays what it always was
            coordinates["timing"] = timing.key()
        if host is not None:  # nor does a one-tier cell's (a host tier of 0 tokens too)
            coordinates["host"] = host.key()
        if self.inputs:  # nor does a cell that reads no file
            coordinates["inputs"] = self.inputs
        self.key = canonical_json(coordinates)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Cell) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"Cell({self.describe()})"

    def __reduce__(self) -> tuple[Any, ...]:  # slots and no __dict__: pickle by arguments
        return (Cell, (self.policy, self.config, self.pool_tokens, self.page_size,
                       self.source, self.seed, self.timing, self.host, self.inputs))

    @property
    def config_dict(self) -> dict[str, Any] | None:
        """The config's keys as JSON types (what a result row writes), None for none."""
        return None if self.config is None else config_dict(self.config)

    @property
    def is_reference(self) -> bool:
        """The oracle or the ceiling: a bound to compare with, not a policy to choose."""
        return self.policy in REFERENCES

    @property
    def workload_key(self) -> tuple[Source, int | None]:
        """Cells with the same key replay the same built workload (built once, shared)."""
        return self.source, self.seed

    def timing_spec(self) -> TimingSpec | None:
        """The TimingSpec this cell replays with (arrivals seeded by its seed); None untimed."""
        return None if self.timing is None else self.timing.spec(self.seed)

    def host_spec(self) -> HostTierSpec | None:
        """The HostTierSpec this cell replays with; None for a one-tier cell."""
        return None if self.host is None else self.host.spec()

    def describe(self) -> str:
        """Short text for messages: ``slru {"protected_threshold":2}, pool 1,000,000, chat``."""
        return describe_cell(self.policy, self.config_json, self.pool_tokens, self.page_size,
                             self.source, self.seed, self.timing, self.host)


def describe_cell(policy: str, config_json: str, pool_tokens: int | None, page_size: int,
                  source: Source, seed: int | None, timing: TimingPoint | None = None,
                  host: HostPoint | None = None) -> str:
    """How messages name a cell (one whose config is not yet validated too)."""
    cfg = "" if config_json == "null" else f" {config_json}"
    pool = "default pool" if pool_tokens is None else f"pool {pool_tokens:,}"
    at_seed = "" if seed is None else f", seed {seed}"
    timed = "" if timing is None else f", timed: {timing.label}"
    tier = "" if host is None else f", {host.label}"
    return f"{policy}{cfg}, {pool}, page {page_size}, {source.label}{at_seed}{timed}{tier}"


def page_pool(pool_tokens: int | None, page_size: int) -> int | None:
    """The pool a replay really gets: whole pages (a pool under one page is left to the check)."""
    if pool_tokens is None or page_size < 1 or pool_tokens < page_size:
        return pool_tokens
    return pool_tokens // page_size * page_size


@dataclass(frozen=True)
class Spot:
    """A cell's coordinates as the grid lists them, its config still as given (JSON)."""

    policy: str
    config_json: str  # the spot's identity; ``config`` is the same value as given
    pool_tokens: int | None
    page_size: int
    source: Source
    seed: int | None
    config: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    timing: TimingPoint | None = None
    host: HostPoint | None = None

    def describe(self) -> str:
        return describe_cell(self.policy, self.config_json, self.pool_tokens, self.page_size,
                             self.source, self.seed, self.timing, self.host)


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

    def count(self) -> int:
        """How many cells the axes multiply to, before any duplicate is dropped (no expansion)."""
        configs = sum(math.prod(len(v) for _, v in a.keys) for a in self.policies)
        runs = sum(len(self.seeds) if s.seeded else 1 for s in self.sources)
        points = self.timing.count() if self.timing is not None else 1
        hosts = self.host.count() if self.host is not None else 1
        per_point = configs * len(self.page_sizes) * len(self.pool_tokens) * hosts
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
        hosts: list[HostPoint | None] = [None] if self.host is None else self.host.points()
        for source in self.sources:
            seeds: Iterable[int | None] = self.seeds if source.seeded else (None,)
            for seed in seeds:
                for point in points:
                    for host in hosts:
                        for axes in self.policies:
                            for config in axes.configs():
                                text = canonical_json(config)
                                for page in self.page_sizes:
                                    tier = None if host is None else host.at_page(page)
                                    for pool in self.pool_tokens:
                                        out.setdefault(Spot(
                                            axes.policy, text, page_pool(pool, page), page,
                                            source, seed, config, point, tier))
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
                        s.timing, s.host, digests[at])
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
                sizes = len({(t.tokens, t.key()["ratio"]) for t in tiers}) + none
                writes = len({t.write_policy for t in tiers})
                policies = len({(t.policy, canonical_json(t.config_dict)) for t in tiers})
        parts = [_count(sizes, "host size"), _count(writes, "write policy")]
        if len(h.policies) > 1:
            parts.append(_count(policies, "host policy"))
        return parts


def _count(n: int, noun: str) -> str:
    if n == 1:
        return f"{n} {noun}"
    return f"{n} {noun[:-1]}ies" if noun.endswith("cy") else f"{n} {noun}s"
