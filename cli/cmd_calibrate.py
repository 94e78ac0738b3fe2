"""``radix-evict calibrate POINTS.csv``: fit a cost model to measured step times.

The fit is core's (:mod:`radix_evict.sim.timed.calibrate`); this command
reads the file, prints the model and its error, and writes ``--out``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from radix_evict.outputs import check_output, contains
from radix_evict.sim.reads import path_inputs
from radix_evict.sim.timed.calibrate import FITTED_BY, to_toml
from radix_evict.sim.timed.calibrate import calibrate as fit_file
from radix_evict.sim.timed.cost import CostModelError

from . import output
from .command import ForceOpt
from .errors import EXIT_INVALID, CliError, mark_json

# What every model this command writes says in its ``source`` line: a rerun may replace such
# a file; any other needs --force.
CALIBRATED = contains(FITTED_BY.encode())


def calibrate(
    ctx: typer.Context,
    points: Annotated[Path, typer.Argument(
        help="CSV of measured steps: uncached,cached,batch,ms[,kind] (kind prefill or decode; "
             "without it, uncached 0 is a decode step).")],
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="Write the model here (TOML), for simulate --cost-model.")] = None,
    name: Annotated[str | None, typer.Option(
        "--name", help="The model's name.", show_default="the CSV's file name")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
    force: ForceOpt = False,
) -> None:
    """Fit a cost model for `simulate --timing` to measured prefill and decode step times."""
    mark_json(ctx.obj, json_out)
    model_out = check_output(out, "--out", "cost model file", CALIBRATED, force=force,
                             inputs=path_inputs("POINTS.csv", [points]))
    try:
        model, errors = fit_file(points, name=name)
    except CostModelError as exc:
        raise CliError(str(exc), EXIT_INVALID) from None
    text = to_toml(model, errors)
    if model_out is not None:
        model_out.write_text(text)
        output.note(f"wrote cost model {model_out.path}")
    if json_out:
        output.emit_json({"cost_model": model.describe(), "fit": [e.to_dict() for e in errors]})
        return
    out_console = output.stdout()
    out_console.print(text, markup=False, highlight=False, end="")
    for e in errors:
        out_console.print(f"fit {e.kind}: {e.points} points, mean error {e.mean_abs_pct:.1f}%, "
                          f"max {e.max_abs_pct:.1f}%, R^2 {e.r2:.4f}", markup=False,
                          highlight=False)
