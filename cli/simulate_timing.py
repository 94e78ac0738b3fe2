"""``simulate --timing``: its options turned into a TimingSpec, its table, its recommendation.

The timed replay itself is core's (:mod:`radix_evict.sim.timed`); this module
checks the options (each error names its option), prints the latency table
and explains the winner the core's objective rule names.
"""

from __future__ import annotations

from typing import Any

from radix_evict.sim.timed.arrivals import ArrivalSpec
from radix_evict.sim.timed.cost import CostModelError, load_cost_model
from radix_evict.sim.timed.limits import TimedInputError, check_chunk
from radix_evict.sim.timed.server import SchedulerSpec
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.winner import (
    OBJECTIVES,
)

from .errors import EXIT_INVALID, EXIT_USAGE, CliError


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
