"""The fleet's tables as text (:class:`~radix_evict.sim.tables.TextTable`): one row per policy
on the fleet, and one per replica; the command line renders them."""

from __future__ import annotations

from collections.abc import Sequence

from radix_evict.sim.fleet.figures import FleetResult
from radix_evict.sim.tables import TextTable

__all__ = ["fleet_table", "replica_table"]


def _ms(x: float) -> str:
    return f"{x:,.1f}" if x < 100 else f"{x:,.0f}"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def fleet_table(results: Sequence[FleetResult], title: str) -> TextTable:
    """One row per policy: the fleet's hit rate, balance, latencies, SLO and GPU-hours."""
    t = TextTable(title)
    t.add_column("policy")
    slo = any(r.fleet.slo_attainment is not None for r in results)
    full = any(r.full_hit_rate is not None for r in results)  # a hybrid model's cache
    cols = ["hit rate", *(["full-KV hit"] if full else []), "req max/mean", "tok max/mean",
            "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "queue p50", "queue p99",
            *(["SLO met"] if slo else []), "GPU-h"]
    for col in cols:
        t.add_column(col, justify="right")
    for r in results:
        f = r.fleet
        tpot = ("-", "-") if f.tpot_ms is None else (_ms(f.tpot_ms.p50), _ms(f.tpot_ms.p99))
        cells = [_pct(r.hit_rate), *([_pct(r.full_hit_rate or 0.0)] if full else []),
                 f"{r.balance.requests_max_over_mean:.2f}",
                 f"{r.balance.tokens_max_over_mean:.2f}", _ms(f.ttft_ms.p50),
                 _ms(f.ttft_ms.p99), *tpot, _ms(f.queue_ms.p50), _ms(f.queue_ms.p99)]
        if slo:
            cells.append(_pct(f.slo_attainment or 0.0))
        t.add_row(r.policy, *cells, f"{r.gpu_hours:,.3f}")
    first = results[0]
    t.caption = (f"{first.replicas} replicas behind {first.router}; times in ms of virtual time, "
                 f"cost model {first.fleet.cost_model}; max/mean: the busiest replica's share "
                 "of requests and prompt tokens over the mean (1.00 = even); GPU-h = replicas "
                 "x makespan")
    if full:
        t.caption += ("; hit rate: reusable (every component present), full-KV: what full "
                      "attention alone holds (docs/hybrid.md)")
    if any(r.fleet.refused for r in results):
        t.caption += "; refused requests (too large for a replica's pool) count as SLO misses"
    return t


def replica_table(result: FleetResult, title: str) -> TextTable:
    """One row per replica of one policy's fleet: its load, hit rate and latencies."""
    t = TextTable(title)
    for col in ("replica", "requests", "prompt tokens", "hit rate", "TTFT p50", "TTFT p99",
                "queue p99", "retracted", "busy"):
        t.add_column(col, justify="right")
    for p in result.per_replica:
        busy = p.busy_s / result.fleet.makespan_s if result.fleet.makespan_s > 0 else 0.0
        t.add_row(str(p.index), f"{p.requests:,}", f"{p.prompt_tokens:,}", _pct(p.hit_rate),
                  _ms(p.ttft_p50_ms), _ms(p.ttft_p99_ms), _ms(p.queue_p99_ms),
                  f"{p.retractions:,}", _pct(busy))
    t.caption = "busy: the share of the fleet's makespan the replica spent computing"
    return t
