"""``sweep --timing``: the timed replay's axes and options, checked as ``simulate`` checks them.

Each value (cli/sweep_options.py reads them) goes through
``simulate``'s own checks (:func:`~radix_evict.cli.simulate_timing.build_timing`),
so a value ``simulate --timing`` refuses is refused here with the same
message and exit code; the grid (core's ``make_grid``) then builds the cells.
"""

from __future__ import annotations

from typing import Any

from radix_evict.sim.sweep import GridParts

from .errors import EXIT_USAGE, CliError
from .simulate_timing import build_timing
from .sweep_options import DEFAULT_OBJECTIVE


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
