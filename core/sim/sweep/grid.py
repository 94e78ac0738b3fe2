"""A sweep grid and its cells: policy x config x pool size x page size x workload x seed.

A :class:`Grid` holds the axes; :meth:`Grid.cells` expands them in a fixed
order (workload, seed, policy, config, page size, pool size), so a grid
always lists its cells the same way. With ``references`` a grid also holds
Belady's offline oracle at every pool size and the infinite-pool ceiling
(reference lines for the curves, not policies to choose). A :class:`Cell` is one replay; its
:attr:`Cell.key` names it in result files, which is how a rerun finds the
cells it already has.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from radix_evict.sim.oracle import ORACLE

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
class Cell:
    """One replay of the grid; ``config`` None means the policy's defaults (tlru: derived)."""

    policy: str
    config_json: str
    pool_tokens: int | None
    page_size: int
    source: Source
    seed: int | None

    @property
    def config(self) -> dict[str, Any] | None:
        value = json.loads(self.config_json)
        return None if value is None else dict(value)

    @property
    def is_reference(self) -> bool:
        """The oracle or the ceiling: a bound to compare with, not a policy to choose."""
        return self.policy in REFERENCES

    @property
    def workload_key(self) -> tuple[Source, int | None]:
        """Cells with the same key replay the same built workload (built once, shared)."""
        return self.source, self.seed

    @property
    def key(self) -> str:
        """This cell's name in a result file (canonical JSON of its coordinates)."""
        return canonical_json({
            "policy": self.policy, "config": self.config, "pool_tokens": self.pool_tokens,
            "page_size": self.page_size, "workload": self.source.name,
            "params": self.source.params, "seed": self.seed,
        })

    def describe(self) -> str:
        """Short text for messages: ``slru {"protected_threshold":2}, pool 1,000,000, chat``."""
        cfg = "" if self.config_json == "null" else f" {self.config_json}"
        pool = "default pool" if self.pool_tokens is None else f"pool {self.pool_tokens:,}"
        seed = "" if self.seed is None else f", seed {self.seed}"
        return (f"{self.policy}{cfg}, {pool}, page {self.page_size}, "
                f"{self.source.label}{seed}")


@dataclass(frozen=True)
class Grid:
    """The axes of a sweep. ``pool_tokens`` None means each workload's default pool."""

    policies: tuple[PolicyAxes, ...]
    sources: tuple[Source, ...]
    pool_tokens: tuple[int | None, ...] = (None,)
    page_sizes: tuple[int, ...] = (1,)
    seeds: tuple[int, ...] = (0,)
    references: bool = False

    def cells(self) -> list[Cell]:
        """Every cell, in a fixed order; duplicates (a value listed twice) appear once."""
        out: dict[str, Cell] = {}
        for source in self.sources:
            seeds: Iterable[int | None] = self.seeds if source.seeded else (None,)
            for seed in seeds:
                for axes in self.policies:
                    for config in axes.configs():
                        for page in self.page_sizes:
                            for pool in self.pool_tokens:
                                cell = Cell(axes.policy, canonical_json(config), pool, page,
                                            source, seed)
                                out.setdefault(cell.key, cell)
                if self.references:
                    for page in self.page_sizes:
                        for pool in self.pool_tokens:
                            cell = Cell(ORACLE, "null", pool, page, source, seed)
                            out.setdefault(cell.key, cell)
                        cell = Cell(CEILING, "null", None, page, source, seed)
                        out.setdefault(cell.key, cell)
        return list(out.values())

    def size_text(self) -> str:
        """``5 policy configs x 3 pool sizes x 2 workloads x 1 seed``: what multiplies."""
        configs = sum(len(a.configs()) for a in self.policies)
        parts = [_count(configs, "policy config"), _count(len(self.pool_tokens), "pool size")]
        if len(self.page_sizes) > 1:
            parts.append(_count(len(self.page_sizes), "page size"))
        parts.append(_count(len(self.sources), "workload"))
        if any(s.seeded for s in self.sources):
            parts.append(_count(len(self.seeds), "seed"))
        return " x ".join(parts)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
