"""A sweep cell: its source, its coordinates, and the replay named by its key.

:class:`Source` is where a cell's requests come from, :class:`Spot` its
coordinates as the grid lists them (its config still as given), and a
:class:`Cell` one replay; its :attr:`Cell.key` names it in result
files, which is how a rerun finds the cells it already has. A cell that
reads files (a trace, a weights file its config names) holds their content
digests in its key (``inputs``, :mod:`radix_evict.sim.sweep.fingerprints`):
a file changed in place is new cells, not a resume of the old ones.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from radix_evict.cache.host_tier import HostTierSpec
from radix_evict.policies.contract import PolicyConfig
from radix_evict.sim.configs import config_dict
from radix_evict.sim.oracle import ORACLE
from radix_evict.sim.sweep.fleet_axes import FleetPoint
from radix_evict.sim.sweep.host_axes import host_key, host_point_text
from radix_evict.sim.sweep.hybrid_axes import HybridPoint
from radix_evict.sim.sweep.keys import canonical_json
from radix_evict.sim.sweep.timing_axes import TimingPoint
from radix_evict.sim.timed.spec import TimingSpec

__all__ = [
    "CEILING", "REFERENCES", "Cell", "Source", "SourceKind", "Spot", "describe_cell",
    "page_pool",
]

CEILING = "ceiling"  # the infinite-pool ceiling: one cell per workload, seed and page size
REFERENCES = (ORACLE, CEILING)  # reference lines a grid may add; not policies
SourceKind = Literal["workload", "trace"]


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
        "fleet",
        "host",
        "hybrid",
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
                 timing: TimingPoint | None = None, host: HostTierSpec | None = None,
                 inputs: Mapping[str, str] | None = None, fleet: FleetPoint | None = None,
                 hybrid: HybridPoint | None = None) -> None:
        self.policy = policy
        self.config = config
        self.pool_tokens = pool_tokens
        self.page_size = page_size
        self.source = source
        self.seed = seed
        self.timing = timing
        self.host = host
        self.fleet = fleet
        self.hybrid = hybrid
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
            coordinates["host"] = host_key(host)
        if fleet is not None:  # nor does a single-server cell's
            coordinates["fleet"] = fleet.key()
        if hybrid is not None:  # nor does a full-attention cell's
            coordinates["hybrid"] = hybrid.key()
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
                       self.source, self.seed, self.timing, self.host, self.inputs,
                       self.fleet, self.hybrid))

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
        return self.host

    def describe(self) -> str:
        """Short text for messages: ``slru {"protected_threshold":2}, pool 1,000,000, chat``."""
        return describe_cell(self.policy, self.config_json, self.pool_tokens, self.page_size,
                             self.source, self.seed, self.timing, self.host, self.fleet,
                             self.hybrid)


def describe_cell(policy: str, config_json: str, pool_tokens: int | None, page_size: int,
                  source: Source, seed: int | None, timing: TimingPoint | None = None,
                  host: HostTierSpec | None = None, fleet: FleetPoint | None = None,
                  hybrid: HybridPoint | None = None) -> str:
    """How messages name a cell (one whose config is not yet validated too)."""
    cfg = "" if config_json == "null" else f" {config_json}"
    pool = "default pool" if pool_tokens is None else f"pool {pool_tokens:,}"
    at_seed = "" if seed is None else f", seed {seed}"
    timed = "" if timing is None else f", timed: {timing.label}"
    tier = "" if host is None else f", {host_point_text(host)}"
    fleet_text = "" if fleet is None else f", {fleet.label}"
    model = "" if hybrid is None else f", {hybrid.label}"
    return (f"{policy}{cfg}, {pool}, page {page_size}, {source.label}{at_seed}{timed}{tier}"
            f"{fleet_text}{model}")


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
    host: HostTierSpec | None = None
    fleet: FleetPoint | None = None
    hybrid: HybridPoint | None = None

    def describe(self) -> str:
        return describe_cell(self.policy, self.config_json, self.pool_tokens, self.page_size,
                             self.source, self.seed, self.timing, self.host, self.fleet,
                             self.hybrid)
