"""The data behind ``sweep``'s tables: the cells, the best config per policy per workload,
the hit-rate curves over pool sizes and over host sizes, as text (:class:`TextTable`).

A timed sweep's tables show p99 TTFT next to the hit rate (and SLO
attainment where an SLO was given), name each table's timing point, and
mark the best config and policy under the sweep's objective. A sweep with a
host tier shows each cell's host point and where its hits came from (device
or host), names each best config's host point, and adds the hit rate over
host sizes at each pool size (:func:`host_curve_table`).

The references (``--oracle``) are named as :mod:`radix_evict.sim.bound`
names them, in curves and captions: the oracle and the ceiling bound the
token replay's hit rate; in the timed replay the oracle is a Belady-guided
replay and neither is a bound, and a caption says so. With a host tier,
only the ceiling's total (device + host) is a bound. The command line
renders each table (``cli/sweep_report.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from radix_evict.sim.bound import CEILING_NAME, ceiling_is, oracle_is, oracle_name
from radix_evict.sim.sweep.grid import CEILING, ORACLE
from radix_evict.sim.sweep.schema import is_host, is_timed
from radix_evict.sim.sweep.summary import (
    ConfigScore,
    Curve,
    HostCurve,
    config_text,
    workload_label,
)
from radix_evict.sim.winner import choose_by_objective

Row = dict[str, Any]
LEFT = {"policy", "config", "workload", "status", "best config", "host", "write policy",
        "host policy"}  # text columns; the rest (figures) are right-aligned


@dataclass
class TextTable:
    """A table as text: its title, column names, rows of cells, and a caption."""

    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    caption: str | None = None
    min_width: int | None = None

    def add_row(self, *cells: str) -> None:
        self.rows.append(list(cells))


def _table(title: str, *columns: str) -> TextTable:
    return TextTable(title, list(columns))


def pct(x: float) -> str:
    """A rate as a percentage with one decimal."""
    return f"{100 * x:.1f}%"


def num(x: float) -> str:
    """A token count with thousands separators (percentiles may be fractional)."""
    return f"{x:,.0f}" if abs(x - round(x)) < 1e-9 or abs(x) >= 100 else f"{x:,.1f}"


def _fig(row: Row, key: str, fmt: Any) -> str:
    value = row.get(key)
    return "-" if value is None else str(fmt(value))


def ms(x: float) -> str:
    """Milliseconds as the timed tables print them (simulate's spelling)."""
    return f"{x:,.0f}" if x >= 100 else f"{x:,.1f}"


AXES = (("cost_model", "cost model", str), ("max_running", "max running", str),
        ("rate", "rate /s", lambda v: f"{v:g}"), ("replicas", "replicas", str),
        ("router", "router", str))  # a fleet's too


def _host_size(row: Row) -> str:
    """A row's host tier size (``2,000,000``, ``x2 = 4,000,001`` for a ratio; ``-`` for none)."""
    if not is_host(row):
        return "-"
    tokens = row.get("host_tokens")
    size = "?" if tokens is None else f"{tokens:,}"
    ratio = row.get("hicache_ratio")
    return size if ratio is None else f"x{ratio:g} = {size}"


def references_caption(timed: bool, oracle: bool = True, ceiling: bool = True) -> str:
    """What the oracle and the ceiling shown are (a bound or a reference), in words."""
    parts = ([f"oracle = {oracle_is(timed)}"] if oracle else []) + (
        [f"ceiling = {ceiling_is(timed)}"] if ceiling else [])
    return "; ".join(parts)


def cell_workload(row: Row) -> str:
    """The per-cell table's workload: a trace by its file name, so a long path does not
    wrap every row onto several lines (the curve and best-config tables name it in full)."""
    label, workload = workload_label(row), str(row["workload"])
    return label.replace(workload, workload.rsplit("/", 1)[-1], 1) if "/" in workload else label


def rows_table(rows: Sequence[Row], title: str) -> TextTable:
    """One line per cell; a timed sweep's cells add p99 TTFT (SLO met, with an SLO) and the
    timing axes that vary between them; cells with a host tier add its size, write policy
    (host policy, where one is set) and the hits found on device and on host (instead of
    the p50 and p90 uncached, for width)."""
    timed = any(is_timed(r) for r in rows)
    host = any(is_host(r) for r in rows)
    host_policy = any(r.get("host_policy") is not None for r in rows)
    slo = any(r.get("slo_attainment") is not None for r in rows)
    axes = [a for a in AXES if timed and len({r.get(a[0]) for r in rows if is_timed(r)}) > 1]
    latency_cols = (["TTFT p99 ms"] if timed else []) + (["SLO met"] if slo else [])
    host_cols = (["host tokens", "write policy"] + (["host policy"] if host_policy else [])
                 if host else [])
    # with a host tier, the hits' split takes the place of the p50 and p90 uncached
    uncached = ("p99_uncached",) if host else ("p50_uncached", "p90_uncached", "p99_uncached")
    t = _table(title, "workload", "seed", "policy", "config", "pool tokens", "page",
               *(a[1] for a in axes), *host_cols, "hit rate",
               *(["device hit", "host hit"] if host else []), *latency_cols,
               *(k.replace("_", " ") for k in uncached), "evicted", "replay s", "status")
    for r in rows:
        ok = r.get("status") == "ok"
        latency = [_fig(r, "ttft_p99_ms", ms)] if timed else []
        if slo:
            latency.append(_fig(r, "slo_attainment", pct))
        hits = ([_fig(r, "device_hit_rate", pct), _fig(r, "host_hit_rate", pct)]
                if host else [])
        figures = [_fig(r, "hit_rate", pct), *hits, *latency, *(_fig(r, k, num)
                                                                 for k in uncached),
                   _fig(r, "evicted_tokens", lambda v: f"{v:,}"),
                   _fig(r, "replay_s", lambda v: f"{v:.2f}")]
        pool = r.get("pool_tokens")
        where = "infinite" if r["policy"] == CEILING else "default"
        point = [_fig(r, key, fmt) if is_timed(r) else "-" for key, _, fmt in axes]
        tier = []
        if host:
            tier = [_host_size(r), r.get("write_policy") or "-"]
            if host_policy:
                tier.append(r.get("host_policy") or ("-" if not is_host(r) else "device"))
        t.add_row(cell_workload(r), "-" if r.get("seed") is None else str(r["seed"]),
                  r["policy"], config_text(r.get("config")),
                  where if pool is None else f"{pool:,}", str(r["page_size"]), *point, *tier,
                  *figures, "ok" if ok else f"error: {r.get('error')}")
    kinds = sorted({is_timed(r) for r in rows if r["policy"] in (ORACLE, CEILING)})
    if kinds:  # the references' names would widen the policy column: said here instead
        t.caption = "; ".join(
            (("timed: " if timed_kind else "token replay: ") if len(kinds) > 1 else "")
            + references_caption(timed_kind) for timed_kind in kinds)
    return t


def best_table(best: Sequence[ConfigScore], objective: str = "hit-rate") -> TextTable:
    """Best config of each policy per workload (and timing point); '*' marks the best policy."""
    timed = any(b.point is not None for b in best)
    host = any(b.host is not None for b in best)
    slo = any(b.slo_attainment is not None for b in best)
    by_what = f"; by {objective}" if timed else ""
    t = _table(f"best config per policy (mean over pool sizes and seeds{by_what}; "
               "* = best policy)",
               "workload", *(["timing"] if timed else []), *(["host"] if host else []),
               "policy", "best config", "hit rate",
               *(["TTFT p99 ms"] if timed else []), *(["SLO met"] if slo else []),
               "p99 uncached", "cells")
    by: dict[tuple[str, str | None, str | None], list[ConfigScore]] = {}
    for b in best:
        by.setdefault((b.workload, b.point, b.host), []).append(b)
    for (workload, point, tier), scores in by.items():
        top = choose_by_objective(scores, objective)[0]
        for s in scores:
            mark = " *" if s is top else ""
            latency = [ms(s.ttft_p99_ms) if s.ttft_p99_ms is not None else "-"] if timed else []
            if slo:
                latency.append("-" if s.slo_attainment is None else pct(s.slo_attainment))
            t.add_row(workload, *([point or "-"] if timed else []),
                      *([tier or "no host tier"] if host else []), s.policy + mark,
                      config_text(s.config), pct(s.hit_rate), *latency,
                      num(s.p99_uncached), str(s.cells))
    return t


def curve_table(curves: Sequence[Curve], workload: str, ceiling: float | None = None,
                point: str | None = None, host: str | None = None) -> TextTable:
    """Hit rate at each pool size, one line per policy at its best config (and the bounds).

    For a timed sweep's ``point``, each entry is the hit rate and the p99 TTFT
    there; ``host`` is a host point's curves.
    """
    mine = [c for c in curves if c.workload == workload and c.point == point
            and c.host == host]
    pools = sorted({p for c in mine for p, _ in c.points})
    at_point = ", ".join(x for x in (point, host) if x)
    where = workload if not at_point else f"{workload} ({at_point})"
    what = "hit rate" if point is None else "hit rate / p99 TTFT ms"
    t = _table(f"{where}: {what} by pool size (tokens), each policy at its best config",
               "policy", "config", *(f"{p:,}" for p in pools))
    timed = point is not None
    for c in mine:
        at, ttft = dict(c.points), dict(c.ttft_points)
        name = oracle_name(timed) if c.policy == ORACLE else c.policy
        t.add_row(name, config_text(c.config), *(
            "-" if p not in at else pct(at[p]) if p not in ttft
            else f"{pct(at[p])} / {ms(ttft[p])}" for p in pools))
    if ceiling is not None:
        t.add_row(CEILING_NAME, "-", *(pct(ceiling) for _ in pools))
    oracle = any(c.policy == ORACLE for c in mine)
    if oracle or ceiling is not None:
        t.caption = references_caption(timed, oracle, ceiling is not None)
    return t


def host_curve_table(curves: Sequence[HostCurve], ceiling: float | None = None) -> TextTable:
    """Hit rate at each host tier size (0: none), one line per policy and write policy.

    ``curves`` are one panel's (workload, timing point, pool size); each
    policy at its best config over the host points. Timed, each entry is the
    hit rate and the p99 TTFT there. The ceiling's total is the bound for any
    host size in the token replay (:func:`radix_evict.sim.bound.ceiling_is`).
    """
    first = curves[0]
    sizes = sorted({h for c in curves for h, _ in c.points})
    pool = "default pool" if first.pool_tokens is None else f"pool {first.pool_tokens:,}"
    where = ", ".join(x for x in (pool, f"page {first.page_size}", first.point) if x)
    what = "hit rate" if first.point is None else "hit rate / p99 TTFT ms"
    title = f"{first.workload} ({where}): {what} by host tier size"
    t = _table(title, "policy", "config", "write policy", *(f"{h:,}" for h in sizes))
    t.min_width = min(len(title), 150)  # the title on one line
    t.caption = ("host tier size in tokens, 0 = none; each policy at its best config over "
                 "the host sizes; hit rate = device + host"
                 + (f"; {references_caption(first.point is not None, oracle=False)}"
                    if ceiling is not None else ""))
    for c in curves:
        at, ttft = dict(c.points), dict(c.ttft_points)
        t.add_row(c.policy, config_text(c.config), c.line, *(
            "-" if h not in at else pct(at[h]) if h not in ttft
            else f"{pct(at[h])} / {ms(ttft[h])}" for h in sizes))
    if ceiling is not None:
        t.add_row(CEILING_NAME, "-", "(any host size)", *(pct(ceiling) for _ in sizes))
    return t
