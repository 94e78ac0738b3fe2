"""Tables people read after ``simulate``: per policy, per workload, per priority tier."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table

from radix_evict.sim.replay import ReplayResult

from .output import num, pct

TIERS_WORKLOAD = "priority-tiers"


def _config_text(r: ReplayResult) -> str:
    if not r.policy_config:
        return "-"
    text = ", ".join(f"{k}={v}" for k, v in r.policy_config.items())
    return f"{text} (derived)" if r.config_source == "workload-suggested" else text


def policy_table(results: Sequence[ReplayResult], winner: str, title: str) -> Table:
    """One row per policy: hit rate, uncached tails, evictions, replay speed."""
    t = Table(title=title, title_justify="left")
    t.add_column("policy")
    t.add_column("config", overflow="fold")
    for col in ("hit rate", "p50 uncached", "p90 uncached", "p99 uncached", "evicted tokens",
                "req/s", "wall s"):
        t.add_column(col, justify="right")
    for r in results:
        mark = " *" if r.label == winner else ""
        t.add_row(r.label + mark, _config_text(r), pct(r.hit_rate), num(r.p50_uncached),
                  num(r.p90_uncached), num(r.p99_uncached), f"{r.evicted_tokens:,}",
                  f"{r.req_per_s:,.0f}", f"{r.wall_s:.2f}")
    t.caption = "* recommended; uncached = prompt tokens per request not served from the cache"
    return t


def tier_table(results: Sequence[ReplayResult], title: str) -> Table:
    """Hit rate per request priority (the priority-tiers question: whose prefixes stay)."""
    tiers = sorted({p for r in results for p in r.tiers})
    t = Table(title=title, title_justify="left")
    t.add_column("policy")
    for p in tiers:
        t.add_column(f"priority {p}", justify="right")
    for r in results:
        rates = r.tier_hit_rates
        t.add_row(r.label, *(pct(rates[p]) if p in rates else "-" for p in tiers))
    return t


def matrix_table(workloads: Sequence[str], policies: Sequence[str],
                 results: Sequence[ReplayResult], winners: dict[str, str]) -> Table:
    """Policy x workload: hit rate and p50/p90/p99 uncached, winner marked per workload."""
    cell = {(r.workload, r.label): r for r in results}
    t = Table(title="policy x workload", title_justify="left")
    t.add_column("workload")
    t.add_column("policy")
    for col in ("hit rate", "p50 uncached", "p90 uncached", "p99 uncached", "evicted tokens"):
        t.add_column(col, justify="right")
    for w in workloads:
        for i, p in enumerate(policies):
            r = cell[(w, p)]
            mark = " *" if winners.get(w) == p else ""
            t.add_row(w if i == 0 else "", p + mark, pct(r.hit_rate), num(r.p50_uncached),
                      num(r.p90_uncached), num(r.p99_uncached), f"{r.evicted_tokens:,}",
                      end_section=i == len(policies) - 1)
    t.caption = "* winner of the workload"
    return t


def hit_rate_pivot(workloads: Sequence[str], policies: Sequence[str],
                   results: Sequence[ReplayResult], winners: dict[str, str]) -> Table:
    """Hit rates at a glance: policies down, workloads across, winner per column."""
    cell = {(r.workload, r.label): r for r in results}
    t = Table(title="hit rate", title_justify="left")
    t.add_column("policy")
    for w in workloads:
        t.add_column(w, justify="right")
    for p in policies:
        t.add_row(p, *(pct(cell[(w, p)].hit_rate) + (" *" if winners.get(w) == p else "")
                       for w in workloads))
    return t


def engine_table(rows: Sequence[dict[str, Any]], winner: str | None, title: str) -> Table:
    """Measured TTFT next to the token figures of the same replay."""
    t = Table(title=title, title_justify="left")
    t.add_column("policy")
    for col in ("hit rate", "p50 uncached", "p90 uncached", "p99 uncached", "evicted tokens",
                "TTFT p50 ms", "TTFT p90 ms", "TTFT p99 ms", "wall s"):
        t.add_column(col, justify="right")
    for r in rows:
        mark = " *" if r["label"] == winner else ""
        t.add_row(r["label"] + mark, pct(r["hit_rate"]), num(r["p50_uncached"]),
                  num(r["p90_uncached"]), num(r["p99_uncached"]), f"{r['evicted_tokens']:,}",
                  f"{r['ttft_ms_p50']:.1f}", f"{r['ttft_ms_p90']:.1f}",
                  f"{r['ttft_ms_p99']:.1f}", f"{r['wall_seconds']:.2f}")
    t.caption = "* recommended (token rule); TTFT from admission to first token, measured"
    return t
