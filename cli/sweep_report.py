"""``sweep``'s tables: the cells, the best config per policy per workload, the hit-rate curves.

A timed sweep's tables show p99 TTFT next to the hit rate (and SLO
attainment where an SLO was given), name each table's timing point, and
mark the best config and policy under the sweep's objective.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table

from radix_evict.sim.sweep.grid import CEILING
from radix_evict.sim.sweep.schema import is_timed
from radix_evict.sim.sweep.summary import (
    ConfigScore,
    Curve,
    config_text,
    workload_label,
)
from radix_evict.sim.winner import choose_by_objective

from .output import num, pct

Row = dict[str, Any]


def _table(title: str, *columns: str) -> Table:
    t = Table(title=title, title_justify="left")
    for c in columns:
        t.add_column(c, overflow="fold", justify="left" if c in {
            "policy", "config", "workload", "status", "best config"} else "right")
    return t


def _fig(row: Row, key: str, fmt: Any) -> str:
    value = row.get(key)
    return "-" if value is None else str(fmt(value))


def ms(x: float) -> str:
    """Milliseconds as the timed tables print them (simulate's spelling)."""
    return f"{x:,.0f}" if x >= 100 else f"{x:,.1f}"


AXES = (("cost_model", "cost model", str), ("max_running", "max running", str),
        ("rate", "rate /s", lambda v: f"{v:g}"))


def rows_table(rows: Sequence[Row], title: str) -> Table:
    """One line per cell; a timed sweep's cells add p99 TTFT (SLO met, with an SLO) and the
    timing axes that vary between them."""
    timed = any(is_timed(r) for r in rows)
    slo = any(r.get("slo_attainment") is not None for r in rows)
    axes = [a for a in AXES if timed and len({r.get(a[0]) for r in rows if is_timed(r)}) > 1]
    latency_cols = (["TTFT p99 ms"] if timed else []) + (["SLO met"] if slo else [])
    t = _table(title, "workload", "seed", "policy", "config", "pool tokens", "page",
               *(a[1] for a in axes), "hit rate", *latency_cols,
               "p50 uncached", "p90 uncached", "p99 uncached", "evicted", "replay s", "status")
    for r in rows:
        ok = r.get("status") == "ok"
        latency = [_fig(r, "ttft_p99_ms", ms)] if timed else []
        if slo:
            latency.append(_fig(r, "slo_attainment", pct))
        figures = [_fig(r, "hit_rate", pct), *latency, *(_fig(r, k, num) for k in (
                   "p50_uncached", "p90_uncached", "p99_uncached")),
                   _fig(r, "evicted_tokens", lambda v: f"{v:,}"),
                   _fig(r, "replay_s", lambda v: f"{v:.2f}")]
        pool = r.get("pool_tokens")
        where = "infinite" if r["policy"] == CEILING else "default"
        point = [_fig(r, key, fmt) if is_timed(r) else "-" for key, _, fmt in axes]
        t.add_row(workload_label(r), "-" if r.get("seed") is None else str(r["seed"]),
                  r["policy"], config_text(r.get("config")),
                  where if pool is None else f"{pool:,}", str(r["page_size"]), *point,
                  *figures, "ok" if ok else f"error: {r.get('error')}")
    return t


def best_table(best: Sequence[ConfigScore], objective: str = "hit-rate") -> Table:
    """Best config of each policy per workload (and timing point); '*' marks the best policy."""
    timed = any(b.point is not None for b in best)
    slo = any(b.slo_attainment is not None for b in best)
    by_what = f"; by {objective}" if timed else ""
    t = _table(f"best config per policy (mean over pool sizes and seeds{by_what}; "
               "* = best policy)",
               "workload", *(["timing"] if timed else []), "policy", "best config", "hit rate",
               *(["TTFT p99 ms"] if timed else []), *(["SLO met"] if slo else []),
               "p99 uncached", "cells")
    by: dict[tuple[str, str | None], list[ConfigScore]] = {}
    for b in best:
        by.setdefault((b.workload, b.point), []).append(b)
    for (workload, point), scores in by.items():
        top = choose_by_objective(scores, objective)[0]
        for s in scores:
            mark = " *" if s is top else ""
            latency = [ms(s.ttft_p99_ms) if s.ttft_p99_ms is not None else "-"] if timed else []
            if slo:
                latency.append("-" if s.slo_attainment is None else pct(s.slo_attainment))
            t.add_row(workload, *([point or "-"] if timed else []), s.policy + mark,
                      config_text(s.config), pct(s.hit_rate), *latency,
                      num(s.p99_uncached), str(s.cells))
    return t


def curve_table(curves: Sequence[Curve], workload: str, ceiling: float | None = None,
                point: str | None = None) -> Table:
    """Hit rate at each pool size, one line per policy at its best config (and the bounds).

    For a timed sweep's ``point``, each entry is the hit rate and the p99 TTFT there.
    """
    mine = [c for c in curves if c.workload == workload and c.point == point]
    pools = sorted({p for c in mine for p, _ in c.points})
    where = workload if point is None else f"{workload} ({point})"
    what = "hit rate" if point is None else "hit rate / p99 TTFT ms"
    t = _table(f"{where}: {what} by pool size (tokens), each policy at its best config",
               "policy", "config", *(f"{p:,}" for p in pools))
    for c in mine:
        at, ttft = dict(c.points), dict(c.ttft_points)
        t.add_row(c.policy, config_text(c.config), *(
            "-" if p not in at else pct(at[p]) if p not in ttft
            else f"{pct(at[p])} / {ms(ttft[p])}" for p in pools))
    if ceiling is not None:
        t.add_row("ceiling", "infinite pool", *(pct(ceiling) for _ in pools))
    return t
