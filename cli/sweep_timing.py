"""``sweep --timing``: the timed replay's axes and options, checked as ``simulate`` checks them.

``--max-running``, ``--rate`` and ``--cost-model`` take lists (grid axes);
``--concurrency``, ``--time-scale``, ``--slo-ttft``, ``--slo-tpot`` and
``--chunked-prefill-size`` one value for every cell. Each value goes through
``simulate``'s own checks (:func:`~radix_evict.cli.simulate_timing.build_timing`),
so a value ``simulate --timing`` refuses is refused here with the same
message and exit code; the grid (core's ``make_grid``) then builds the cells.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

import typer

from radix_evict.sim.sweep import GridParts, SweepValueError
from radix_evict.sim.sweep.grid import Grid
from radix_evict.sim.sweep.values import parse_numbers, split_top_level
from radix_evict.sim.timed.limits import TimedInputError, check_chunk

from .errors import EXIT_USAGE, CliError
from .simulate_timing import build_timing
from .sweep_grid import count_values

TimingOpt = Annotated[bool, typer.Option(
    "--timing",
    help="Replay every cell through a continuous-batching server in virtual time (as "
         "simulate --timing): rows add TTFT, queueing, TPOT, end-to-end latency, SLO "
         "attainment, goodput; adds the axes --max-running, --rate, --cost-model.")]
MaxRunningOpt = Annotated[list[str] | None, typer.Option(
    "--max-running",
    help="With --timing: most requests running at once, N1,N2,... (a grid axis; SGLang's "
         "--max-running-requests). Default: SGLang's default for the pool.")]
RateOpt = Annotated[list[str] | None, typer.Option(
    "--rate",
    help="With --timing: Poisson arrivals, R1,R2,... requests per second (a grid axis; "
         "ranges 1..16*2). Default: the workload's own session starts and think times, or a "
         "trace's timestamps.")]
CostModelOpt = Annotated[list[str] | None, typer.Option(
    "--cost-model",
    help="With --timing: cost models A,B,... (a grid axis): presets ({presets}) or TOML/JSON "
         "files (see `radix-evict calibrate`). Default: llama3-8b-h100.")]
ObjectiveOpt = Annotated[str | None, typer.Option(
    "--objective",
    help="What the summary's best config ranks by: hit-rate (default), ttft-p99 or slo (the "
         "last two with --timing; slo with --slo-ttft or --slo-tpot).")]

DEFAULT_OBJECTIVE = "hit-rate"


def _numbers(values: Sequence[str], option: str) -> list[float] | None:
    if not values:
        return None
    try:
        return [float(n) for v in values for n in parse_numbers(v, option)]
    except SweepValueError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None


def timing_options(
    *,
    timing: bool,
    max_running: Sequence[str],
    rate: Sequence[str],
    cost_model: Sequence[str],
    concurrency: int | None,
    time_scale: float | None,
    slo_ttft: float | None,
    slo_tpot: float | None,
    chunked_prefill_size: int | None,
    objective: str | None,
) -> dict[str, Any]:
    """The timed replay's GridParts fields the command line gives (None where it gives none)."""
    models = [n for v in cost_model for n in split_top_level(v) if n]
    return {
        "timing": True if timing else None,
        "max_running": count_values(max_running, "--max-running"),
        "rates": _numbers(rate, "--rate"),
        "cost_models": models or None,
        "concurrency": concurrency,
        "time_scale": time_scale,
        "slo_ttft": slo_ttft,
        "slo_tpot": slo_tpot,
        "chunked_prefill_size": chunked_prefill_size,
        "objective": objective,
    }


def check_timing(parts: GridParts) -> str:
    """simulate's checks on every value of the merged timing options; returns the objective.

    Each cost model, rate and max-running value goes through ``build_timing``
    once (with the other axes at their first value): its usage errors name
    the option (``--rate must be positive``, ``--cost-model: ...``), with
    simulate's exit codes. Values the command line's own types would have
    refused (from a grid file) are refused here, naming the option.
    """
    objective = parts.objective or DEFAULT_OBJECTIVE
    for option, values, least in (("--max-running", parts.max_running, 1),
                                  ("--concurrency", [parts.concurrency], 1),
                                  ("--chunked-prefill-size", [parts.chunked_prefill_size], 0)):
        for v in values or []:
            if v is not None and v < least:
                raise CliError(f"{option} must be >= {least}, got {v}", EXIT_USAGE)
    shared = {"concurrency": parts.concurrency, "time_scale": parts.time_scale,
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
            raise CliError(str(exc), EXIT_USAGE) from None
        if spec is None:  # untimed, and no timing option given: nothing more to check
            break
    return objective


def check_timed_cells(grid: Grid) -> None:
    """The timed replay's limits that join two axes, checked for every pair of values in
    ``grid`` before any cell runs (core/sim/timed/limits.py): a chunk smaller than a page
    size would otherwise fail its cells one by one, mid-sweep, as error rows."""
    if grid.timing is None:
        return
    chunk = grid.timing.chunked_prefill_size
    for page in grid.page_sizes:
        try:
            check_chunk(chunk, page)
        except TimedInputError as exc:
            raise CliError(f"--chunked-prefill-size {chunk:,} with --page-size {page:,}: "
                           f"{exc}", EXIT_USAGE) from None
