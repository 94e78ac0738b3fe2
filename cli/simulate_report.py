"""Tables people read after ``simulate``: per policy, per workload, per priority tier."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table

from radix_evict.sim.bound import Bound
from radix_evict.sim.configs import DERIVED
from radix_evict.sim.results import ReplayResult
from radix_evict.sim.workloads import workload_names

from . import output
from .output import num, pct


def _config_text(r: ReplayResult) -> str:
    if not r.policy_config:
        return "-"
    text = ", ".join(f"{k}={v}" for k, v in r.policy_config.items())
    return f"{text} (derived)" if r.config_source == DERIVED else text


def _gap_text(bound: Bound, hit_rate: float) -> str:
    share = bound.gap_closed(hit_rate)
    return "-" if share is None else f"{100 * share:.0f}%"


def beaten_note(bound: Bound, results: Sequence[ReplayResult]) -> str:
    """Said where a policy's hit rate passes the oracle's: the row is then no bound here."""
    beaten = bound.beaten_by(results)
    if not beaten:
        return ""
    return (f"; {', '.join(beaten)} beat{'s' if len(beaten) == 1 else ''} the oracle's hit rate "
            f"on {bound.workload}: it is no bound there")


def bound_caption(bound: Bound, results: Sequence[ReplayResult] = ()) -> str:
    """What the oracle row and the ceiling mean, with the ceiling's figure."""
    gap = ("gap closed = share of the lru-to-oracle hit-rate gap" if bound.is_bound else
           "no gap is measured against it")
    return (f"oracle = {bound.oracle_is}; infinite-pool ceiling {pct(bound.ceiling.hit_rate)}; "
            f"{gap}{beaten_note(bound, results)}")


def policy_table(results: Sequence[ReplayResult], winner: str, title: str,
                 bound: Bound | None = None) -> Table:
    """One row per policy: hit rate, uncached tails, evictions, replay speed (and the bound)."""
    t = Table(title=title, title_justify="left")
    t.add_column("policy")
    t.add_column("config", overflow="fold")
    cols = ["hit rate", "p50 uncached", "p90 uncached", "p99 uncached", "evicted tokens",
            "req/s", "wall s"]
    if bound is not None:
        cols.insert(1, "gap closed")
    for col in cols:
        t.add_column(col, justify="right")
    rows = [*results, bound.oracle] if bound is not None else list(results)
    for r in rows:
        mark = " *" if r.label == winner else ""
        gap = [] if bound is None else [_gap_text(bound, r.hit_rate)]
        t.add_row(r.label + mark, _config_text(r), pct(r.hit_rate), *gap, num(r.p50_uncached),
                  num(r.p90_uncached), num(r.p99_uncached), f"{r.evicted_tokens:,}",
                  f"{r.req_per_s:,.0f}", f"{r.wall_s:.2f}",
                  end_section=bound is not None and r is results[-1])
    t.caption = "* recommended; uncached = prompt tokens per request not served from the cache"
    if bound is not None:
        t.caption += "\n" + bound_caption(bound, results)
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
                 results: Sequence[ReplayResult], winners: dict[str, str],
                 bounds: dict[str, Bound] | None = None) -> Table:
    """Policy x workload: hit rate and p50/p90/p99 uncached, winner marked per workload."""
    cell = {(r.workload, r.label): r for r in results}
    bounds = bounds or {}
    for w, bound in bounds.items():
        cell[(w, bound.oracle.label)] = bound.oracle
    t = Table(title="policy x workload", title_justify="left")
    t.add_column("workload")
    t.add_column("policy")
    cols = ["hit rate", "p50 uncached", "p90 uncached", "p99 uncached", "evicted tokens"]
    if bounds:
        cols.insert(1, "gap closed")
    for col in cols:
        t.add_column(col, justify="right")
    for w in workloads:
        b = bounds.get(w)
        labels = [*policies, b.oracle.label] if b is not None else list(policies)
        for i, p in enumerate(labels):
            r = cell[(w, p)]
            mark = " *" if winners.get(w) == p else ""
            gap = [] if b is None else [_gap_text(b, r.hit_rate)]
            t.add_row(w if i == 0 else "", p + mark, pct(r.hit_rate), *gap, num(r.p50_uncached),
                      num(r.p90_uncached), num(r.p99_uncached), f"{r.evicted_tokens:,}",
                      end_section=i == len(labels) - 1)
    t.caption = "* winner of the workload"
    if bounds:
        first = next(iter(bounds.values()))
        gap_is = ("gap closed = share of the lru-to-oracle hit-rate gap" if first.is_bound else
                  "no gap is measured against it")
        t.caption += (f"\noracle = {first.oracle_is}; {gap_is}; ceilings in the hit-rate table"
                      + "".join(beaten_note(b, results) for b in bounds.values()))
    return t


def hit_rate_pivot(workloads: Sequence[str], policies: Sequence[str],
                   results: Sequence[ReplayResult], winners: dict[str, str],
                   bounds: dict[str, Bound] | None = None) -> Table:
    """Hit rates at a glance: policies down, workloads across, winner per column."""
    cell = {(r.workload, r.label): r for r in results}
    t = Table(title="hit rate", title_justify="left")
    t.add_column("policy")
    for w in workloads:
        t.add_column(w, justify="right")
    for i, p in enumerate(policies):
        t.add_row(p, *(pct(cell[(w, p)].hit_rate) + (" *" if winners.get(w) == p else "")
                       for w in workloads), end_section=bool(bounds) and i == len(policies) - 1)
    if bounds:
        timed = not next(iter(bounds.values())).is_bound
        t.add_row("oracle (Belady-guided, not a bound)" if timed else "oracle",
                  *(pct(bounds[w].oracle.hit_rate) for w in workloads))
        t.add_row("ceiling (infinite pool)", *(pct(bounds[w].ceiling.hit_rate)
                                               for w in workloads))
    return t


def engine_table(rows: Sequence[dict[str, Any]], winner: str | None, title: str) -> Table:
    """Measured TTFT next to the token figures of the same replay."""
    t = Table(title=title, title_justify="left")
    t.add_column("policy")
    for col in ("hit rate", "p50 uncached", "p90 uncached", "p99 uncached", "evicted tokens",
                "TTFT p50 ms", "TTFT p90 ms", "TTFT p99 ms", "cache ms/req", "wall s"):
        t.add_column(col, justify="right")
    for r in rows:
        mark = " *" if r["label"] == winner else ""
        t.add_row(r["label"] + mark, pct(r["hit_rate"]), num(r["p50_uncached"]),
                  num(r["p90_uncached"]), num(r["p99_uncached"]), f"{r['evicted_tokens']:,}",
                  f"{r['ttft_ms_p50']:.1f}", f"{r['ttft_ms_p90']:.1f}",
                  f"{r['ttft_ms_p99']:.1f}", f"{r['cache_ms_per_request']:.2f}",
                  f"{r['wall_seconds']:.2f}")
    t.caption = ("* recommended (token rule); TTFT from admission to first token, measured; "
                 "cache ms/req: the cache's own calls (lookup, locks, evict, insert)")
    return t


def list_workloads_table(json_out: bool) -> None:
    """The built-in workloads with their summaries and parameters."""
    from radix_evict.sim.workloads import WORKLOADS

    specs = [WORKLOADS[n].describe() for n in workload_names()]
    if json_out:
        output.emit_json({"workloads": specs})
        return
    from rich.table import Table

    t = Table(title="workloads (simulate --workload NAME --param KEY=VALUE)",
              title_justify="left")
    for col in ("workload", "summary", "parameters (default)"):
        t.add_column(col, overflow="fold")
    for s in specs:
        ps = ", ".join(f"{p['name']}={p['default']}" for p in s["params"])
        t.add_row(s["name"], s["summary"], ps)
    output.stdout().print(t)
