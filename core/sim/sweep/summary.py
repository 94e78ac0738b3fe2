"""What a sweep's rows say: the best config of each policy per workload, and hit-rate curves.

A config's score on a workload is its mean over the pool sizes (and seeds)
it ran at: one config for the whole curve, as a deployment would pick. The
best config of a policy is chosen by the simulator's one winner rule
(:mod:`radix_evict.sim.winner`: hit rate, with the p99 tie-break). The
curve of a policy is its best config's hit rate at each pool size, averaged
over seeds: the hit-rate-versus-cache-size curve cache engineers read.
The oracle (when the grid has it) is a curve of its own, and the ceiling a
hit rate per workload (and timing point); neither is ever a "best config".
Each is named as :mod:`radix_evict.sim.bound` names it: in the token replay
the oracle and the ceiling bound the hit rate; in the timed replay neither
is a bound (the oracle is a Belady-guided replay), and the summary's
``references`` says which is which.

A timed sweep's rows are read per workload *and timing point* (cost model,
max running, rate: :func:`point_label`): the best config at 2 requests per
second need not be the best at 8. There a config's score carries its mean
p99 TTFT and SLO attainment too, and the best config is chosen under an
objective (``hit-rate``, ``ttft-p99`` or ``slo``) by
:func:`radix_evict.sim.winner.choose_by_objective`, the rule ``simulate
--objective`` uses.

Rows of cells with a host tier (HiCache) are read per host point too (size,
write policy, host policy: :func:`host_point_label`), so the best config and
the winner are per host size and write policy. :func:`host_curves` gives the
other curve such a sweep asks for: hit rate (and p99 TTFT, timed) over host
sizes at each pool size, one line per policy (at its best config over every
host point) and write policy; a host size of 0 is the one-tier cell.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

from radix_evict.sim.bound import oracle_name, references
from radix_evict.sim.sweep.fleet_axes import fleet_label
from radix_evict.sim.sweep.grid import (
    CEILING,
    ORACLE,
    REFERENCES,
    canonical_json,
    host_label,
    host_line,
    timing_label,
)
from radix_evict.sim.sweep.hybrid_axes import HybridPoint
from radix_evict.sim.sweep.rows import OK
from radix_evict.sim.sweep.schema import is_host, is_hybrid, is_timed
from radix_evict.sim.winner import choose_by_objective

Row = dict[str, Any]


def workload_label(row: Row) -> str:
    """``chat``, ``chat{"convs":50}`` or a trace path: one name per workload and parameters;
    a hybrid row's adds its model (``chat on gpt-oss-120b, kv 2GiB, swa ratio 0.8``), so each
    model has its own best configs and curves."""
    params = row.get("params") or {}
    text = json.dumps(params, sort_keys=True, separators=(",", ":"))
    label = row["workload"] if not params else f"{row['workload']}{text}"
    if is_hybrid(row):
        label += " on " + HybridPoint(row["model_arch"], row.get("kv_memory"),
                                      row.get("swa_full_tokens_ratio"),
                                      row.get("mamba_full_memory_ratio")).label
    return label


def point_label(row: Row) -> str | None:
    """A timed row's timing point (``llama3-8b-h100, max running 64, rate 2/s``); None untimed."""
    if not is_timed(row):
        return None
    label = timing_label(row["cost_model"], row.get("max_running"), row.get("rate"))
    if row.get("replicas") is not None:  # a fleet's point: its own curves and best configs
        label += ", " + fleet_label(row["replicas"], row["router"],
                                    canonical_json(row.get("router_config")))
    return label


def host_point_label(row: Row) -> str | None:
    """A host row's host point (``host 1,000,000 tokens, write_back``); None without one."""
    if not is_host(row):
        return None
    ratio = row.get("hicache_ratio")
    return host_label(None if ratio is not None else row.get("host_tokens"), ratio,
                      row["write_policy"], row.get("write_threshold"), row.get("host_policy"),
                      _json(row.get("host_config")), row.get("admission"))


def host_line_label(row: Row) -> str | None:
    """A host row's point without its size (``write_back``): a line of the host curves."""
    if not is_host(row):
        return None
    return host_line(row["write_policy"], row.get("write_threshold"), row.get("host_policy"),
                     _json(row.get("host_config")), row.get("admission"))


def _json(value: Any) -> str | None:
    return None if value is None else canonical_json(value)


def config_text(config: Any) -> str:
    """A config as compact JSON (``-`` for none)."""
    if not config:
        return "-"
    return json.dumps(config, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class _P99:
    p99: float


@dataclass(frozen=True)
class _Timed:
    """What :func:`choose_by_objective` reads of a timed result: ``ttft_ms.p99``, SLO met."""

    ttft_ms: _P99
    slo_attainment: float | None


@dataclass(frozen=True)
class ConfigScore:
    """One policy config on one workload, averaged over its pool sizes and seeds.

    ``point`` is the timing point of a timed sweep's score (None untimed);
    there ``ttft_p99_ms`` and ``slo_attainment`` are means too (the latter
    None without an SLO).
    """

    workload: str
    policy: str
    config: dict[str, Any] | None
    hit_rate: float
    p99_uncached: float
    cells: int
    point: str | None = None
    ttft_p99_ms: float | None = None
    slo_attainment: float | None = None
    host: str | None = None  # the host point (:func:`host_point_label`); None: one tier

    @property
    def label(self) -> str:
        return f"{self.policy} {config_text(self.config)}"

    @property
    def timing(self) -> _Timed | None:
        """The timed figures an objective ranks by (None for an untimed score)."""
        if self.ttft_p99_ms is None:
            return None
        return _Timed(_P99(self.ttft_p99_ms), self.slo_attainment)

    def to_dict(self) -> dict[str, Any]:
        out = {"workload": self.workload, "policy": self.policy, "config": self.config,
               "hit_rate": self.hit_rate, "p99_uncached": self.p99_uncached,
               "cells": self.cells}
        if self.point is not None:
            out.update({"timing": self.point, "ttft_p99_ms": self.ttft_p99_ms,
                        "slo_attainment": self.slo_attainment})
        if self.host is not None:
            out["host"] = self.host
        return out


@dataclass
class Curve:
    """Hit rate over pool sizes of one policy (at its best config) on one workload.

    In a timed sweep, one per timing point (``point``), with the p99 TTFT at
    each pool size in ``ttft_points``.
    """

    workload: str
    policy: str
    config: dict[str, Any] | None
    points: list[tuple[int, float]] = field(default_factory=list)
    point: str | None = None
    ttft_points: list[tuple[int, float]] = field(default_factory=list)
    host: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"workload": self.workload, "policy": self.policy,
                               "config": self.config,
                               "pool_tokens": [p for p, _ in self.points],
                               "hit_rate": [h for _, h in self.points]}
        if self.point is not None:
            out.update({"timing": self.point, "ttft_p99_ms": [t for _, t in self.ttft_points]})
        if self.host is not None:
            out["host"] = self.host
        if self.policy == ORACLE:  # a bound in the token replay, a reference when timed
            out.update({"name": oracle_name(self.point is not None),
                        "is_bound": self.point is None})
        return out


@dataclass
class HostCurve:
    """Hit rate over host-tier sizes: one policy (at its best config), one write policy (and
    host policy: ``line``), at one pool size of one workload (and timing point).

    ``points`` are (host tokens, hit rate), means over seeds; host tokens 0 is
    the one-tier cell. ``device_points`` split off the device's hits, and
    ``ttft_points`` (timed) give the p99 TTFT at each size.
    """

    workload: str
    policy: str
    config: dict[str, Any] | None
    line: str
    pool_tokens: int | None
    page_size: int
    points: list[tuple[int, float]] = field(default_factory=list)
    device_points: list[tuple[int, float]] = field(default_factory=list)
    point: str | None = None
    ttft_points: list[tuple[int, float]] = field(default_factory=list)

    @property
    def label(self) -> str:
        """``lru, write_back`` or ``slru {...}, write_through``: how the line is named."""
        cfg = config_text(self.config)
        return f"{self.policy}{'' if cfg == '-' else ' ' + cfg}, {self.line}"

    def to_dict(self) -> dict[str, Any]:
        out = {"workload": self.workload, "policy": self.policy, "config": self.config,
               "host_line": self.line, "pool_tokens": self.pool_tokens,
               "page_size": self.page_size, "host_tokens": [h for h, _ in self.points],
               "hit_rate": [v for _, v in self.points],
               "device_hit_rate": [v for _, v in self.device_points]}
        if self.point is not None:
            out.update({"timing": self.point, "ttft_p99_ms": [t for _, t in self.ttft_points]})
        return out


def _ok(rows: Iterable[Row]) -> list[Row]:
    return [r for r in rows if r.get("status") == OK]


def _policies(rows: Iterable[Row]) -> list[Row]:
    return [r for r in _ok(rows) if r["policy"] not in REFERENCES]


def _key(r: Row, key: str) -> Any:
    if key == "workload":
        return workload_label(r)
    if key == "point":
        return point_label(r)
    if key == "host":
        return host_point_label(r)
    if key == "line":
        return host_line_label(r)
    if key == "host_size":  # the host tier's real size; 0 for none
        return r.get("host_tokens") if is_host(r) else 0
    if key == "config":  # a reference's config is how it ran (the timed oracle's rounds)
        return "-" if r["policy"] in REFERENCES else config_text(r.get(key))
    return r.get(key)


def _group(rows: Iterable[Row], *keys: str) -> dict[tuple[Any, ...], list[Row]]:
    out: dict[tuple[Any, ...], list[Row]] = {}
    for r in rows:
        out.setdefault(tuple(_key(r, key) for key in keys), []).append(r)
    return out


def _mean(group: Sequence[Row], key: str) -> float | None:
    """The mean of ``key`` over ``group``; None where a row lacks it (untimed, no SLO)."""
    values = [r.get(key) for r in group]
    if not values or any(v is None for v in values):
        return None
    return fmean(values)  # type: ignore[arg-type]


def config_scores(rows: Sequence[Row], by_host: bool = True) -> list[ConfigScore]:
    """Every (workload, timing point, host point, policy, config) with its means over pools
    and seeds; without ``by_host``, over every host point too."""
    keys = ("workload", "point", "host", "policy", "config") if by_host else (
        "workload", "point", "policy", "config")
    out = []
    for key, group in _group(_policies(rows), *keys).items():
        w, point, p = key[0], key[1], key[-2]
        out.append(ConfigScore(
            w, p, group[0].get("config"), fmean(r["hit_rate"] for r in group),
            fmean(r["p99_uncached"] for r in group), len(group), point,
            _mean(group, "ttft_p99_ms"), _mean(group, "slo_attainment"),
            key[2] if by_host else None))
    return out


def best_configs(rows: Sequence[Row], objective: str = "hit-rate",
                 by_host: bool = True) -> list[ConfigScore]:
    """The best config of each policy on each workload (timing point, host point) under
    ``objective``; without ``by_host``, one over every host point.

    ``hit-rate`` is the simulator's winner rule; ``ttft-p99`` and ``slo`` rank
    a timed sweep's mean p99 TTFT and SLO attainment
    (:func:`~radix_evict.sim.winner.choose_by_objective`; an ObjectiveError
    where the rows lack the figures).
    """
    by: dict[tuple[str, str | None, str | None, str], list[ConfigScore]] = {}
    for s in config_scores(rows, by_host):
        by.setdefault((s.workload, s.point, s.host, s.policy), []).append(s)
    return [choose_by_objective(scores, objective)[0] for scores in by.values()]


def curves(rows: Sequence[Row], objective: str = "hit-rate") -> list[Curve]:
    """Per workload (timing point, host point) and policy: the best config's hit rate at each
    pool size.

    Means over seeds; a timed curve has the p99 TTFT at each pool size too.
    """
    best = {(b.workload, b.point, b.host, b.policy): config_text(b.config)
            for b in best_configs(rows, objective)}
    best.update({(w, pt, None, ORACLE): "-" for (w, pt) in _group(_ok(rows), "workload",
                                                                  "point")})
    out: list[Curve] = []
    pooled = [r for r in _ok(rows) if r["policy"] != CEILING]
    for (w, pt, h, p, cfg), group in _group(pooled, "workload", "point", "host", "policy",
                                            "config").items():
        if best.get((w, pt, h, p)) != cfg:
            continue
        pools = _group(group, "pool_tokens")
        points = sorted((pool, fmean(r["hit_rate"] for r in g)) for (pool,), g in pools.items())
        ttft = sorted((pool, t) for (pool,), g in pools.items()
                      if (t := _mean(g, "ttft_p99_ms")) is not None)
        config = None if p in REFERENCES else group[0].get("config")
        out.append(Curve(w, p, config, points, pt, ttft, h))
    return out


def host_curves(rows: Sequence[Row], objective: str = "hit-rate") -> list[HostCurve]:
    """Per workload, timing point, pool size, policy and host line: hit rate over host sizes.

    Each policy at its best config over every host point and pool size (one
    config for the line, as a deployment would pick); the one-tier rows of
    the same cell coordinates are every line's host size 0. Empty when no row
    has a host tier.
    """
    mine = _policies(rows)
    if not any(is_host(r) for r in mine):
        return []
    best = {(b.workload, b.point, b.policy): config_text(b.config)
            for b in best_configs(rows, objective, by_host=False)}
    out: list[HostCurve] = []
    for (w, pt, pool, page, p, cfg), group in _group(
            mine, "workload", "point", "pool_tokens", "page_size", "policy", "config").items():
        if best.get((w, pt, p)) != cfg:
            continue
        one_tier = [r for r in group if not is_host(r)]
        for (line,), tiered in _group([r for r in group if is_host(r)], "line").items():
            sizes = _group(one_tier + tiered, "host_size")
            hit = sorted((x, fmean(r["hit_rate"] for r in g)) for (x,), g in sizes.items())
            device = sorted((x, fmean(r["device_hit_rate"] if is_host(r) else r["hit_rate"]
                                      for r in g)) for (x,), g in sizes.items())
            ttft = sorted((x, t) for (x,), g in sizes.items()
                          if (t := _mean(g, "ttft_p99_ms")) is not None)
            out.append(HostCurve(w, p, group[0].get("config"), line, pool, page, hit, device,
                                 pt, ttft))
    return out


def ceilings(rows: Sequence[Row]) -> dict[str, float]:
    """The infinite-pool ceiling's hit rate per workload (mean over seeds), where it ran."""
    mine = [r for r in _ok(rows) if r["policy"] == CEILING]
    return {w: fmean(r["hit_rate"] for r in g) for (w,), g in _group(mine, "workload").items()}


def point_ceilings(rows: Sequence[Row]) -> dict[tuple[str, str | None], float]:
    """The ceiling's hit rate per workload and timing point (None: untimed), mean over seeds:
    a timed grid's ceiling is its timing point's own, not the mean over points."""
    mine = [r for r in _ok(rows) if r["policy"] == CEILING]
    return {(w, pt): fmean(r["hit_rate"] for r in g)
            for (w, pt), g in _group(mine, "workload", "point").items()}


def reference_lines(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """Per workload and timing point that has reference rows: what its oracle and ceiling
    are (:func:`radix_evict.sim.bound.references`: names, bound or not, in words) and the
    ceiling's hit rate. The oracle bounds the hit rate in the token replay only."""
    tops = point_ceilings(rows)
    out = []
    for w, pt in _group([r for r in _ok(rows) if r["policy"] in REFERENCES], "workload",
                        "point"):
        refs = references(pt is not None)
        refs["ceiling"]["hit_rate"] = tops.get((w, pt))
        out.append({"workload": w, "timing": pt, **refs})
    return out


def summary_dict(rows: Sequence[Row], objective: str = "hit-rate") -> dict[str, Any]:
    """The summary as JSON types: best configs, curves (the oracle's too), ceilings, what
    each reference is (``references``), and with a host tier the host curves.

    A timed sweep's summary names the objective its best configs were chosen by.
    """
    out: dict[str, Any] = {"best_configs": [b.to_dict() for b in best_configs(rows, objective)],
                           "curves": [c.to_dict() for c in curves(rows, objective)],
                           "ceilings": ceilings(rows)}
    refs = reference_lines(rows)
    if refs:
        out["references"] = refs
    tiers = host_curves(rows, objective)
    if tiers:
        out["host_curves"] = [c.to_dict() for c in tiers]
    if any(is_timed(r) for r in rows):
        out["objective"] = objective
    return out
