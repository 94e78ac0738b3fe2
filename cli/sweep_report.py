"""``sweep``'s tables: the cells, the best config per policy per workload, the hit-rate curves."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table

from radix_evict.sim.sweep.grid import CEILING
from radix_evict.sim.sweep.summary import (
    ConfigScore,
    Curve,
    config_text,
    workload_label,
)
from radix_evict.sim.winner import choose_winner

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


def rows_table(rows: Sequence[Row], title: str) -> Table:
    """One line per cell."""
    t = _table(title, "workload", "seed", "policy", "config", "pool tokens", "page",
               "hit rate", "p50 uncached", "p90 uncached", "p99 uncached", "evicted",
               "replay s", "status")
    for r in rows:
        ok = r.get("status") == "ok"
        figures = [_fig(r, "hit_rate", pct), *(_fig(r, k, num) for k in (
                   "p50_uncached", "p90_uncached", "p99_uncached")),
                   _fig(r, "evicted_tokens", lambda v: f"{v:,}"),
                   _fig(r, "replay_s", lambda v: f"{v:.2f}")]
        pool = r.get("pool_tokens")
        where = "infinite" if r["policy"] == CEILING else "default"
        t.add_row(workload_label(r), "-" if r.get("seed") is None else str(r["seed"]),
                  r["policy"], config_text(r.get("config")),
                  where if pool is None else f"{pool:,}", str(r["page_size"]),
                  *figures, "ok" if ok else f"error: {r.get('error')}")
    return t


def best_table(best: Sequence[ConfigScore]) -> Table:
    """Best config of each policy per workload; '*' marks the workload's best policy."""
    t = _table("best config per policy (mean over pool sizes and seeds; * = best policy)",
               "workload", "policy", "best config", "hit rate", "p99 uncached", "cells")
    by: dict[str, list[ConfigScore]] = {}
    for b in best:
        by.setdefault(b.workload, []).append(b)
    for workload, scores in by.items():
        top = choose_winner(scores)[0]
        for s in scores:
            mark = " *" if s is top else ""
            t.add_row(workload, s.policy + mark, config_text(s.config), pct(s.hit_rate),
                      num(s.p99_uncached), str(s.cells))
    return t


def curve_table(curves: Sequence[Curve], workload: str, ceiling: float | None = None) -> Table:
    """Hit rate at each pool size, one line per policy at its best config (and the bounds)."""
    mine = [c for c in curves if c.workload == workload]
    pools = sorted({p for c in mine for p, _ in c.points})
    t = _table(f"{workload}: hit rate by pool size (tokens), each policy at its best config",
               "policy", "config", *(f"{p:,}" for p in pools))
    for c in mine:
        at = dict(c.points)
        t.add_row(c.policy, config_text(c.config),
                  *(pct(at[p]) if p in at else "-" for p in pools))
    if ceiling is not None:
        t.add_row("ceiling", "infinite pool", *(pct(ceiling) for _ in pools))
    return t
