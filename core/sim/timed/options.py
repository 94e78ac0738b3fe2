"""The timed replay's options (``--timing`` and the rest) turned into one TimingSpec.

:func:`build_timing` checks ``simulate``'s timing options, each problem an
:class:`~radix_evict.errors.OptionError` naming its option, and builds the
:class:`~radix_evict.sim.timed.spec.TimingSpec` the replay takes;
:func:`check_timing_grid` runs the same checks on every value of a sweep's
timing axes, so a value ``simulate --timing`` refuses is refused there with the
same message.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from radix_evict.errors import OptionError
from radix_evict.sim.timed.arrivals import ArrivalSpec
from radix_evict.sim.timed.cost import CostModel, CostModelError, load_cost_model
from radix_evict.sim.timed.limits import TimedInputError, check_chunk
from radix_evict.sim.timed.scheduler import SchedulerSpec
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.winner import OBJECTIVES

if TYPE_CHECKING:
    from radix_evict.sim.sweep.spec import GridParts

__all__ = ["DEFAULT_OBJECTIVE", "build_timing", "check_page", "check_timing_grid",
           "timed_option_error"]

DEFAULT_OBJECTIVE = "hit-rate"


def build_timing(*, timing: bool, seed: int, objective: str, max_running: int | None = None,
                 rate: float | None = None, concurrency: int | None = None,
                 time_scale: float | None = None,
                 cost_model: str | Path | CostModel | None = None,
                 slo_ttft: float | None = None, slo_tpot: float | None = None,
                 chunked_prefill_size: int | None = None) -> TimingSpec | None:
    """The TimingSpec the options ask for (None without ``timing``); errors name the option."""
    if objective not in OBJECTIVES:
        raise OptionError(f"--objective {objective!r}: use {', '.join(OBJECTIVES)}")
    opts: dict[str, Any] = {
        "max_running": max_running, "rate": rate, "concurrency": concurrency,
        "time_scale": time_scale, "cost_model": cost_model, "slo_ttft": slo_ttft,
        "slo_tpot": slo_tpot, "chunked_prefill_size": chunked_prefill_size}
    given = {k: v for k, v in opts.items() if v is not None}
    if not timing:
        if given:
            names = ", ".join("--" + k.replace("_", "-") for k in sorted(given))
            raise OptionError(f"{names}: timed-replay options; add --timing")
        if objective != DEFAULT_OBJECTIVE:
            raise OptionError(f"--objective {objective} ranks timed replays; add --timing")
        return None
    if objective == "slo" and slo_ttft is None and slo_tpot is None:
        raise OptionError("--objective slo needs an SLO: give --slo-ttft MS (or --slo-tpot MS)")
    if rate is not None and concurrency is not None:
        raise OptionError("give --rate or --concurrency, not both")
    for name in ("rate", "time_scale", "slo_ttft", "slo_tpot"):
        v = opts[name]
        if v is not None and not v > 0:
            raise OptionError(f"--{name.replace('_', '-')} must be positive, got {v}")
    try:
        cost = load_cost_model(cost_model or "llama3-8b-h100")
    except CostModelError as exc:
        raise OptionError(f"--cost-model: {exc}", invalid=True) from None
    sched: dict[str, Any] = {}
    if max_running is not None:
        sched["max_running"] = max_running
    if chunked_prefill_size is not None:
        sched["chunked_prefill_size"] = chunked_prefill_size
    try:
        arrivals = ArrivalSpec(rate=rate, concurrency=concurrency,
                               time_scale=time_scale or 1.0, seed=seed)
    except TimedInputError as exc:
        raise timed_option_error(exc) from None
    return TimingSpec(cost_model=cost, arrivals=arrivals, scheduler=SchedulerSpec(**sched),
                      slo_ttft_ms=slo_ttft, slo_tpot_ms=slo_tpot)


def timed_option_error(exc: TimedInputError) -> OptionError:
    """A timed-replay limit the options broke, naming the option (``--time-scale``)."""
    return OptionError(f"--{exc.field.replace('_', '-')}: {exc}")


def check_page(timing: TimingSpec | None, page_size: int) -> None:
    """Before any replay: a chunk budget the page size cannot cut (an OptionError)."""
    if timing is None:
        return
    try:
        check_chunk(timing.scheduler.chunked_prefill_size, page_size)
    except TimedInputError as exc:
        raise timed_option_error(exc) from None


def check_timing_grid(parts: GridParts) -> str:
    """A sweep's timing axes, checked by :func:`build_timing` on every value, as
    ``simulate --timing`` checks one; returns the objective.

    Each cost model, rate and max-running value is checked once (with the
    other axes at their first value). Values the command line's own types
    would have refused (from a grid file) are refused here, naming the option.
    """
    objective = parts.objective or DEFAULT_OBJECTIVE
    for option, values, least in (("--max-running", parts.max_running, 1),
                                  ("--concurrency", [parts.concurrency], 1),
                                  ("--chunked-prefill-size", [parts.chunked_prefill_size], 0)):
        for v in values or []:
            if v is not None and v < least:
                raise OptionError(f"{option} must be >= {least}, got {v}")
    shared: dict[str, Any] = {"concurrency": parts.concurrency, "time_scale": parts.time_scale,
              "slo_ttft": parts.slo_ttft, "slo_tpot": parts.slo_tpot,
              "chunked_prefill_size": parts.chunked_prefill_size}
    none: list[Any] = [None]
    axes: dict[str, list[Any]] = {"cost_model": list(parts.cost_models or none),
                                  "rate": list(parts.rates or none),
                                  "max_running": list(parts.max_running or none)}
    first = {name: values[0] for name, values in axes.items()}
    checks = [first] + [{**first, name: v} for name, values in axes.items() for v in values[1:]]
    for point in checks:
        try:
            spec = build_timing(timing=bool(parts.timing), seed=0, objective=objective,
                                **point, **shared)
        except ValueError as exc:  # the timed replay's own check, past simulate's
            raise OptionError(str(exc)) from None
        if spec is None:  # untimed, and no timing option given: nothing more to check
            break
    return objective
