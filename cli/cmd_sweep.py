"""``radix-evict sweep``: a policy x config x pool size x workload x seed grid, locally or on Ray.

Everything that can be checked is checked before the first replay (every
cell's config by the registry's strict checks, the workloads, the output
file); the grid's size is printed; then the cells run on local worker
processes or as Ray tasks, each row written to ``--out`` as it finishes, so
a rerun skips them and Ctrl-C loses nothing that finished. The engine is
:mod:`radix_evict.sim.sweep`; this module reads options and reports.
With ``--timing`` every cell runs the timed replay, and ``--max-running``,
``--rate`` and ``--cost-model`` are axes of the grid (``sweep_timing``).
``--host-tokens`` (or ``--hicache-ratio``), ``--write-policy`` and
``--host-policy`` add a host tier (SGLang's HiCache) and its axes
(``sweep_host``); ``--plot`` then draws hit rate over host size.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer

from radix_evict.outputs import Input
from radix_evict.sim.draw import check_plot
from radix_evict.sim.host import check_host_grid
from radix_evict.sim.parallel import usable_cores
from radix_evict.sim.preflight import check_pool, check_workload_pools
from radix_evict.sim.reads import at_files, cost_model_files, path_inputs
from radix_evict.sim.sweep import (
    GridParts,
    SweepGridError,
    SweepOutcome,
    SweepPlan,
    SweepValueError,
    local_executor,
    make_grids,
    plan_sweep,
    ray_executor,
    read_grid_file,
    run_sweep,
)
from radix_evict.sim.sweep.check import check_timed_cells
from radix_evict.sim.sweep.grid import Grid
from radix_evict.sim.sweep.report import SweepReport, failed_cell_text, sweep_report
from radix_evict.sim.sweep.run import SweepSizeError
from radix_evict.sim.sweep.sources import WorkloadKey, build_workloads
from radix_evict.sim.sweep.store import ResultFileError
from radix_evict.sim.timed.cost import CostModel
from radix_evict.sim.timed.options import DEFAULT_OBJECTIVE, check_timing_grid
from radix_evict.sim.winner import ObjectiveError
from radix_evict.sim.workloads import Workload

from . import output
from .command import options_command
from .errors import EXIT_INTERRUPTED, EXIT_USAGE, CliError, mark_json, problems_code
from .sweep_options import PANELS, SweepOptions, grid_parts
from .sweep_report import best_table, curve_table, host_curve_table, rows_table

EXIT_CELLS_FAILED = 3  # the sweep ran, but some cells failed (their rows say why)


def _plan(parts: GridParts, grid_file: Path | None, out: Path | None, *, dry_run: bool,
          max_cells: int, reads: Sequence[Input] = ()) -> tuple[SweepPlan, str]:
    """The checked grid (or a grid file's several grids) and the objective; bad cells and
    bad axis values become CLI errors before anything runs (the timed options by
    simulate's checks, for each grid, and the host tier's too)."""
    try:
        if grid_file is not None:
            parts = parts.over(read_grid_file(grid_file))
        objective = parts.objective or DEFAULT_OBJECTIVE
        for each in parts.expand():
            objective = check_timing_grid(each)
            check_host_grid(each)
        grids = make_grids(parts)
        for grid in grids:
            check_pools(grid)
            check_timed_cells(grid)
        models = [m for each in parts.expand() for m in each.cost_models or []
                  if not isinstance(m, CostModel)]
        reads = [*reads, *path_inputs("--grid", [grid_file]),
                 *cost_model_files("the cost model", models)]
        return plan_sweep(grids, out, write=not dry_run, max_cells=max_cells,
                          inputs=reads), objective
    except SweepGridError as exc:
        problems = exc.problems
        raise CliError(str(exc), problems_code(problems) if problems else 1,
                       [p.to_dict() for p in problems]) from None
    except (SweepValueError, SweepSizeError, ResultFileError) as exc:
        raise CliError(str(exc), EXIT_USAGE) from None


def check_pools(grid: Grid) -> None:
    """simulate's preflight for every pool size: each must fit in this machine's memory."""
    for pool in grid.pool_tokens:
        check_pool(pool, 1)


def _workloads(plan: SweepPlan) -> dict[WorkloadKey, Workload]:
    """Every workload the cells to run replay, built (traces read) before any cell runs;
    each default pool must hold a page of its grid's page sizes (simulate's preflight)."""
    cells = plan.todo if plan.todo else plan.cells
    wls = build_workloads(cells)
    for grid in plan.grids:
        if None in grid.pool_tokens:
            mine = [w for (source, _), w in wls.items() if source in grid.sources]
            for page in grid.page_sizes:
                check_workload_pools(mine, None, page)
    return wls


def _notes(plan: SweepPlan, out: Path | None, dry_run: bool) -> None:
    """Say what the plan merged, and what a real run will repair in the result file."""
    for note in plan.notes:
        output.note(f"note: {note}")
    torn = plan.results.torn if plan.results is not None else 0
    if torn:
        output.note(f"note: {out}: its last line is unfinished ({torn:,} bytes: a sweep "
                    "stopped while writing a row); "
                    + ("a real run drops it; this dry run changed nothing" if dry_run
                       else "dropping it before adding rows"))


def _where(ray: str | None, jobs: int | None, todo: int) -> str:
    if ray is not None:
        return f"Ray tasks ({ray})"
    n = min(todo, jobs or usable_cores())
    return f"{n} local worker process{'es' * (n != 1)}"


def _report(plan: SweepPlan, outcome: SweepOutcome, wall: float, opts: SweepOptions,
            objective: str) -> SweepReport:
    """The tables (or --json), then the plot: the rows read by core's sweep_report."""
    try:
        report = sweep_report(outcome.rows, objective)
    except ObjectiveError as exc:  # the checks before the run make this rare
        raise CliError(str(exc), EXIT_USAGE) from None
    rows = report.rows
    if opts.json_out:
        output.emit_json(report.to_dict(plan, outcome, wall))
    else:
        con = output.stdout()
        if opts.out is None or len(rows) <= 60:
            con.print(rows_table(rows, f"sweep: {len(rows)} of {len(plan.cells)} cells"))
        if report.best:
            con.print(best_table(report.best, objective))
            for p in report.curve_panels():
                con.print(curve_table(report.curves, p.workload, p.ceiling, p.point, p.host))
            for h in report.host_panels():
                con.print(host_curve_table(h.curves, h.ceiling))
    return report


def _list_cells(plan: SweepPlan, json_out: bool) -> None:
    """--dry-run: every cell, marked when the result file has it (linear in cells)."""
    todo = plan.todo_keys
    if json_out:
        output.emit_json({"cells": [{"cell": c.key, "todo": c.key in todo} for c in plan.cells]})
        return
    lines = [f"{i:>4}  {c.describe()}{plan.via_mark(c)}{'' if c.key in todo else '  (done)'}"
             for i, c in enumerate(plan.cells, 1)]
    output.stdout().print("\n".join(lines), markup=False, highlight=False)


@options_command(SweepOptions, PANELS)
def sweep(ctx: typer.Context, opts: SweepOptions) -> None:
    """Sweep a grid of policy x config x pool size x workload x seed; one row per cell.

    With --timing, each cell runs the timed replay (TTFT, SLOs under load) and
    --max-running, --rate and --cost-model are axes of the grid too. --host-tokens
    (or --hicache-ratio), --write-policy and --host-policy add a host tier
    (SGLang's HiCache) and its axes.

    Exit codes: 0 every cell ran, 1 invalid grid (nothing ran), 2 usage or
    environment error, 3 some cells failed (their rows say why), 130 stopped
    by Ctrl-C (finished cells are kept in --out; rerun to resume).
    """
    mark_json(ctx.obj, opts.json_out)
    out, dry_run = opts.out, opts.dry_run
    plot_out = check_plot(opts.plot, force=opts.force)
    plan, objective = _plan(grid_parts(opts), opts.grid_file, out, dry_run=dry_run,
                            max_cells=opts.max_cells,
                            reads=at_files("--host-config", opts.host_config or []))
    plot_out = None if plot_out is None else plot_out.reading(plan.inputs)
    wls = _workloads(plan)  # a missing or bad trace fails now, dry run or not
    ray, jobs = opts.ray, opts.jobs
    executor = ray_executor(ray) if ray is not None and plan.todo and not dry_run \
        else local_executor(jobs)
    kept = f"; {len(plan.kept):,} already in {out}" if plan.kept else ""
    output.note(f"sweep: {plan.size_text}{kept}; {len(plan.todo):,} to run"
                + (f" on {_where(ray, jobs, len(plan.todo))}" if plan.todo and not dry_run
                   else ""))
    _notes(plan, out, dry_run)
    if dry_run:
        _list_cells(plan, opts.json_out)
        return

    def on_row(row: dict[str, Any]) -> None:
        if row.get("status") != "ok":
            output.note(failed_cell_text(row))

    t0 = time.perf_counter()
    with output.progress_bar("sweep", enabled=opts.progress) as bar:
        outcome = run_sweep(plan, executor, progress=bar, on_row=on_row, workloads=wls)
    wall = time.perf_counter() - t0
    report = _report(plan, outcome, wall, opts, objective)
    if plot_out is not None and outcome.rows:
        from radix_evict.sim.sweep.draw import HOST_TITLE, TITLE, plot_curves, plot_host_curves

        if report.host_curves:  # a host tier's sweep: hit rate (p99 TTFT) over host size
            plot_host_curves(plot_out, report.host_curves, HOST_TITLE, report.ceilings)
        else:
            plot_curves(plot_out, report.curves, TITLE, report.ceilings)
        output.note(f"wrote plot {opts.plot}")
    saved = f"; rows in {out}" if out is not None else ""
    output.note(f"wall time {wall:.2f} s for {outcome.ran} cells{saved}")
    if outcome.interrupted:
        output.note(f"interrupted: {outcome.ran} of {len(plan.todo)} cells finished and were "
                    "kept" + (f" in {out}; rerun the same command to resume" if out else ""))
        raise typer.Exit(EXIT_INTERRUPTED)
    if outcome.failed:
        output.note(f"{len(outcome.failed)} of {len(outcome.rows)} cells failed")
        raise typer.Exit(EXIT_CELLS_FAILED)
