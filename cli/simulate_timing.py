"""``simulate --timing``: its options turned into a TimingSpec, its table, its recommendation.

The timed replay itself is core's (:mod:`radix_evict.sim.timed`); this module
checks the options (each error names its option), prints the latency table
and explains the winner the core's objective rule names.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table

from radix_evict.sim.bound import Bound
from radix_evict.sim.results import ReplayResult
from radix_evict.sim.timed.arrivals import ArrivalSpec
from radix_evict.sim.timed.cost import CostModelError, load_cost_model
from radix_evict.sim.timed.limits import TimedInputError, check_chunk
from radix_evict.sim.timed.server import SchedulerSpec
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.winner import (
    OBJECTIVES,
)

from .errors import EXIT_INVALID, EXIT_USAGE, CliError
from .output import pct


def build_timing(*, timing: bool, seed: int, objective: str, **opts: Any) -> TimingSpec | None:
    """The TimingSpec the options ask for (None without --timing); usage errors name the option."""
    if objective not in OBJECTIVES:
        raise CliError(f"--objective {objective!r}: use {', '.join(OBJECTIVES)}", EXIT_USAGE)
    given = {k: v for k, v in opts.items() if v is not None}
    if not timing:
        if given:
            names = ", ".join("--" + k.replace("_", "-") for k in sorted(given))
            raise CliError(f"{names}: timed-replay options; add --timing", EXIT_USAGE)
        if objective != "hit-rate":
            raise CliError(f"--objective {objective} ranks timed replays; add --timing",
                           EXIT_USAGE)
        return None
    if objective == "slo" and opts.get("slo_ttft") is None and opts.get("slo_tpot") is None:
        raise CliError("--objective slo needs an SLO: give --slo-ttft MS (or --slo-tpot MS)",
                       EXIT_USAGE)
    if opts.get("rate") is not None and opts.get("concurrency") is not None:
        raise CliError("give --rate or --concurrency, not both", EXIT_USAGE)
    for name in ("rate", "time_scale", "slo_ttft", "slo_tpot"):
        v = opts.get(name)
        if v is not None and not v > 0:
            raise CliError(f"--{name.replace('_', '-')} must be positive, got {v}", EXIT_USAGE)
    try:
        cost = load_cost_model(opts.get("cost_model") or "llama3-8b-h100")
    except CostModelError as exc:
        raise CliError(f"--cost-model: {exc}", EXIT_INVALID) from None
    sched: dict[str, Any] = {}
    if opts.get("max_running") is not None:
        sched["max_running"] = opts["max_running"]
    if opts.get("chunked_prefill_size") is not None:
        sched["chunked_prefill_size"] = opts["chunked_prefill_size"]
    try:
        arrivals = ArrivalSpec(rate=opts.get("rate"), concurrency=opts.get("concurrency"),
                               time_scale=opts.get("time_scale") or 1.0, seed=seed)
    except TimedInputError as exc:
        raise timed_usage_error(exc) from None
    return TimingSpec(
        cost_model=cost,
        arrivals=arrivals,
        scheduler=SchedulerSpec(**sched),
        slo_ttft_ms=opts.get("slo_ttft"),
        slo_tpot_ms=opts.get("slo_tpot"),
    )


def timed_usage_error(exc: TimedInputError) -> CliError:
    """A timed-replay limit the options broke, naming the option (``--time-scale``)."""
    return CliError(f"--{exc.field.replace('_', '-')}: {exc}", EXIT_USAGE)


def check_page(timing: TimingSpec | None, page_size: int) -> None:
    """Before any replay: a chunk budget the page size cannot cut (a usage error)."""
    if timing is None:
        return
    try:
        check_chunk(timing.scheduler.chunked_prefill_size, page_size)
    except TimedInputError as exc:
        raise timed_usage_error(exc) from None


def _ms(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:,.1f}"


def timed_table(results: Sequence[ReplayResult], winner: str, title: str,
                bound: Bound | None = None) -> Table:
    """One row per policy: hit rate and the latencies a user feels, under load."""
    t = Table(title=title, title_justify="left")
    t.add_column("policy")
    slo = any(r.timing.slo_attainment is not None for r in results)
    cols = ["hit rate", "TTFT p50", "TTFT p90", "TTFT p99", "queue p99", "TPOT p50",
            "e2e p99", "req/s served", "retracted", "peak queue"]
    if slo:
        cols[7:7] = ["SLO met", "goodput"]
    for col in cols:
        t.add_column(col, justify="right")
    rows = [*results, bound.oracle] if bound is not None and bound.oracle.timing else list(results)
    for r in rows:
        f = r.timing
        mark = " *" if r.label == winner else ""
        cells = [pct(r.hit_rate), _ms(f.ttft_ms.p50), _ms(f.ttft_ms.p90), _ms(f.ttft_ms.p99),
                 _ms(f.queue_ms.p99), "-" if f.tpot_ms is None else _ms(f.tpot_ms.p50),
                 _ms(f.e2e_ms.p99),
                 f"{f.throughput_rps:,.2f}", f"{f.retractions:,}", f"{f.peak_queue:,}"]
        if slo:
            cells[7:7] = [pct(f.slo_attainment or 0.0), f"{f.goodput_rps or 0.0:,.2f}"]
        name = r.label + mark
        if bound is not None and r is bound.oracle:
            name = f"{r.label} (Belady-guided)"
        t.add_row(name, *cells, end_section=r is results[-1] and len(rows) > len(results))
    first = results[0].timing
    t.caption = (f"* recommended; times in ms of virtual time, cost model {first.cost_model}; "
                 "TTFT = arrival to first token (queueing + prefill)")
    if any(r.timing.refused for r in results):
        t.caption += "; refused requests (too large for the pool) count as SLO misses"
    if bound is not None and bound.oracle.timing:
        t.caption += "\n" + timed_oracle_caption(bound, results)
    return t


def timed_oracle_caption(bound: Bound, results: Sequence[ReplayResult]) -> str:
    """What the timed oracle row is, and who beats it here (on hit rate or p99 TTFT)."""
    o = bound.oracle.timing
    assert o is not None
    hits = bound.beaten_by(results)
    ttft = [r.label for r in results if r.timing.ttft_ms.p99 < o.ttft_ms.p99]
    beaten = [f"{', '.join(who)} on {what}" for who, what in ((hits, "hit rate"),
                                                              (ttft, "p99 TTFT")) if who]
    return f"oracle = {bound.oracle_is}" + (f"; beaten here by {'; '.join(beaten)}"
                                             if beaten else "")
