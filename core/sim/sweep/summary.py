"""What a sweep's rows say: the best config of each policy per workload, and hit-rate curves.

A config's score on a workload is its mean over the pool sizes (and seeds)
it ran at: one config for the whole curve, as a deployment would pick. The
best config of a policy is chosen by the simulator's one winner rule
(:mod:`radix_evict.sim.winner`: hit rate, with the p99 tie-break). The
curve of a policy is its best config's hit rate at each pool size, averaged
over seeds: the hit-rate-versus-cache-size curve cache engineers read.
The oracle (when the grid has it) is a curve of its own, and the ceiling a
hit rate per workload; neither is ever a "best config".
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

from radix_evict.sim.sweep.grid import CEILING, ORACLE, REFERENCES
from radix_evict.sim.sweep.rows import OK
from radix_evict.sim.winner import choose_winner

Row = dict[str, Any]


def workload_label(row: Row) -> str:
    """``chat``, ``chat{"convs":50}`` or a trace path: one name per workload and parameters."""
    params = row.get("params") or {}
    text = json.dumps(params, sort_keys=True, separators=(",", ":"))
    return row["workload"] if not params else f"{row['workload']}{text}"


def config_text(config: Any) -> str:
    """A config as compact JSON (``-`` for none)."""
    if not config:
        return "-"
    return json.dumps(config, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class ConfigScore:
    """One policy config on one workload, averaged over its pool sizes and seeds."""

    workload: str
    policy: str
    config: dict[str, Any] | None
    hit_rate: float
    p99_uncached: float
    cells: int

    @property
    def label(self) -> str:
        return f"{self.policy} {config_text(self.config)}"

    def to_dict(self) -> dict[str, Any]:
        return {"workload": self.workload, "policy": self.policy, "config": self.config,
                "hit_rate": self.hit_rate, "p99_uncached": self.p99_uncached,
                "cells": self.cells}


@dataclass
class Curve:
    """Hit rate over pool sizes of one policy (at its best config) on one workload."""

    workload: str
    policy: str
    config: dict[str, Any] | None
    points: list[tuple[int, float]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"workload": self.workload, "policy": self.policy, "config": self.config,
                "pool_tokens": [p for p, _ in self.points],
                "hit_rate": [h for _, h in self.points]}


def _ok(rows: Iterable[Row]) -> list[Row]:
    return [r for r in rows if r.get("status") == OK]


def _policies(rows: Iterable[Row]) -> list[Row]:
    return [r for r in _ok(rows) if r["policy"] not in REFERENCES]


def _group(rows: Iterable[Row], *keys: str) -> dict[tuple[Any, ...], list[Row]]:
    out: dict[tuple[Any, ...], list[Row]] = {}
    for r in rows:
        k = tuple(workload_label(r) if key == "workload" else
                  config_text(r.get(key)) if key == "config" else r.get(key) for key in keys)
        out.setdefault(k, []).append(r)
    return out


def config_scores(rows: Sequence[Row]) -> list[ConfigScore]:
    """Every (workload, policy, config) with its mean hit rate and p99 over pools and seeds."""
    return [
        ConfigScore(w, p, group[0].get("config"), fmean(r["hit_rate"] for r in group),
                    fmean(r["p99_uncached"] for r in group), len(group))
        for (w, p, _), group in _group(_policies(rows), "workload", "policy", "config").items()
    ]


def best_configs(rows: Sequence[Row]) -> list[ConfigScore]:
    """The best config of each policy on each workload (by the simulator's winner rule)."""
    by: dict[tuple[str, str], list[ConfigScore]] = {}
    for s in config_scores(rows):
        by.setdefault((s.workload, s.policy), []).append(s)
    return [choose_winner(scores)[0] for scores in by.values()]


def curves(rows: Sequence[Row]) -> list[Curve]:
    """Per workload and policy: the best config's hit rate at each pool size (mean over seeds)."""
    best = {(b.workload, b.policy): config_text(b.config) for b in best_configs(rows)}
    best.update({(w, ORACLE): "-" for (w,) in _group(_ok(rows), "workload")})
    out: list[Curve] = []
    pooled = [r for r in _ok(rows) if r["policy"] != CEILING]
    for (w, p, cfg), group in _group(pooled, "workload", "policy", "config").items():
        if best.get((w, p)) != cfg:
            continue
        pools = _group(group, "pool_tokens")
        points = sorted((pool, fmean(r["hit_rate"] for r in g)) for (pool,), g in pools.items())
        out.append(Curve(w, p, group[0].get("config"), points))
    return out


def ceilings(rows: Sequence[Row]) -> dict[str, float]:
    """The infinite-pool ceiling's hit rate per workload (mean over seeds), where it ran."""
    mine = [r for r in _ok(rows) if r["policy"] == CEILING]
    return {w: fmean(r["hit_rate"] for r in g) for (w,), g in _group(mine, "workload").items()}


def summary_dict(rows: Sequence[Row]) -> dict[str, Any]:
    """The summary as JSON types: best configs, curves (the oracle's too), ceilings."""
    return {"best_configs": [b.to_dict() for b in best_configs(rows)],
            "curves": [c.to_dict() for c in curves(rows)], "ceilings": ceilings(rows)}
