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

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from radix_evict.outputs import Input
from radix_evict.sim.parallel import usable_cores
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
from radix_evict.sim.sweep.grid import Grid
from radix_evict.sim.sweep.run import MAX_CELLS, SweepSizeError
from radix_evict.sim.sweep.sources import WorkloadKey, build_workloads
from radix_evict.sim.sweep.store import ResultFileError
from radix_evict.sim.sweep.summary import (
    best_configs,
    curves,
    host_curves,
    host_point_label,
    point_ceilings,
    point_label,
    summary_dict,
    workload_label,
)
from radix_evict.sim.timed.cost import CostModel
from radix_evict.sim.winner import OBJECTIVE_RULES, ObjectiveError
from radix_evict.sim.workloads import Workload

from . import output
from .errors import EXIT_INTERRUPTED, EXIT_USAGE, CliError, mark_json
from .options import problems_code
from .preflight import check_plot, check_pool, check_workload_pools
from .simulate_options import (
    ChunkedPrefillOpt,
    ConcurrencyOpt,
    SloTpotOpt,
    SloTtftOpt,
    TimeScaleOpt,
)
from .sweep_grid import parts_from_options
from .sweep_host import (
    HicacheRatioOpt,
    HostConfigOpt,
    HostPolicyOpt,
    HostTokensOpt,
    WritePolicyOpt,
    WriteThresholdOpt,
    check_host,
    host_options,
)
from .sweep_report import best_table, curve_table, host_curve_table, rows_table
from .sweep_timing import (
    DEFAULT_OBJECTIVE,
    CostModelOpt,
    MaxRunningOpt,
    ObjectiveOpt,
    RateOpt,
    TimingOpt,
    check_timed_cells,
    check_timing,
    timing_options,
)
from .writes import ForceOpt, at_files, cost_model_files, path_inputs

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
            objective = check_timing(each)
            check_host(each)
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


def _report(plan: SweepPlan, outcome: SweepOutcome, wall: float, *, json_out: bool,
            out: Path | None, objective: str) -> None:
    rows = outcome.rows
    try:
        summary = summary_dict(rows, objective)
        best = best_configs(rows, objective)
        cs = curves(rows, objective)
    except ObjectiveError as exc:  # the checks before the run make this rare
        raise CliError(str(exc), EXIT_USAGE) from None
    if json_out:
        data: dict[str, Any] = {
            "cells": len(plan.cells), "ran": outcome.ran, "kept": len(plan.kept),
            "failed": len(outcome.failed), "interrupted": outcome.interrupted,
            "rows": rows, "summary": summary, "wall_s": wall,
        }
        if plan.timed:
            data.update({"objective": objective, "objective_rule": OBJECTIVE_RULES[objective]})
        output.emit_json(data)
        return
    con = output.stdout()
    if out is None or len(rows) <= 60:
        con.print(rows_table(rows, f"sweep: {len(rows)} of {len(plan.cells)} cells"))
    if best:
        con.print(best_table(best, objective))
        tops = point_ceilings(rows)
        groups = dict.fromkeys((workload_label(r), point_label(r), host_point_label(r))
                               for r in rows if r.get("policy") != "ceiling")
        for workload, point, host in groups:
            if any(c.workload == workload and c.point == point and c.host == host
                   and len(c.points) > 1 for c in cs):
                con.print(curve_table(cs, workload, tops.get((workload, point)), point, host))
        tiers = host_curves(rows, objective)
        panels = dict.fromkeys((c.workload, c.point, c.pool_tokens, c.page_size) for c in tiers)
        for workload, point, pool, page in panels:
            mine = [c for c in tiers if (c.workload, c.point, c.pool_tokens, c.page_size)
                    == (workload, point, pool, page)]
            if any(len(c.points) > 1 for c in mine):
                con.print(host_curve_table(mine, tops.get((workload, point))))


def _list_cells(plan: SweepPlan, json_out: bool) -> None:
    """--dry-run: every cell, marked when the result file has it (linear in cells)."""
    todo = plan.todo_keys
    if json_out:
        output.emit_json({"cells": [{"cell": c.key, "todo": c.key in todo} for c in plan.cells]})
        return
    lines = [f"{i:>4}  {c.describe()}{'' if c.key in todo else '  (done)'}"
             for i, c in enumerate(plan.cells, 1)]
    output.stdout().print("\n".join(lines), markup=False, highlight=False)


GridFileOpt = Annotated[Path | None, typer.Option(
    "--grid", help="Grid file (.yaml, .yml or .toml) with the axes below as keys; options "
                   "given here replace the file's.")]
PolicyOpt = Annotated[list[str] | None, typer.Option(
    "--policy", "-p", help="Policy (repeatable or A,B): one of {choices}. Default: the "
                           "policies named by -g, else the five public ones.")]
VaryOpt = Annotated[list[str] | None, typer.Option(
    "--vary", "-g", help="POLICY.KEY=V1,V2,... (repeatable): values to try for one config "
                         "key; ranges 512..4096*2 (x2) or 1..9+2 (+2).")]
PoolOpt = Annotated[list[str] | None, typer.Option(
    "--pool-tokens", help="Pool sizes in tokens: N1,N2,... with K/M/G suffixes (1M = "
                          "1,000,000) or a range 1M..16M*2. Default: each workload's own.")]
PageOpt = Annotated[list[str] | None, typer.Option(
    "--page-size", help="Page sizes in tokens: N1,N2,... (default 1).")]
WorkloadOpt = Annotated[list[str] | None, typer.Option(
    "--workload", "-w", help="Built-in workload (repeatable or A,B). Default: chat, unless "
                             "--trace is given.")]
TraceOpt = Annotated[list[Path] | None, typer.Option(
    "--trace", help="Mooncake JSONL trace (repeatable); read once, shared by its cells.")]
ParamOpt = Annotated[list[str] | None, typer.Option(
    "--param", "-P", help="Workload parameter KEY=VALUE (every workload that has KEY), "
                          "WORKLOAD.KEY=VALUE, or trace.KEY=VALUE (e.g. trace.limit=2000).")]
SeedsOpt = Annotated[list[str] | None, typer.Option(
    "--seeds", help="Workload seeds S1,S2,... (default 0); a trace is the same for every "
                    "seed and runs once.")]
OutOpt = Annotated[Path | None, typer.Option(
    "--out", "-o", help="Result file (.jsonl, .csv, or .parquet with pyarrow), written as "
                        "cells finish; a rerun skips the cells already in it.")]
RayOpt = Annotated[str | None, typer.Option(
    "--ray", help="Run each cell as a Ray task: 'auto' (this machine's cluster or "
                  "RAY_ADDRESS), HOST:PORT, ray://HOST:PORT, or 'local' (a private Ray "
                  "here). Needs radix-evict[ray].")]
JobsOpt = Annotated[int | None, typer.Option(
    "--jobs", "-j", min=1, help="Local worker processes (default: every usable core).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print rows and summary as JSON.")]
PlotOpt = Annotated[Path | None, typer.Option(
    "--plot", help="Write the hit-rate curves (PNG, SVG or PDF); with a host tier, hit rate "
                   "(and p99 TTFT, timed) over host size.")]
OracleOpt = Annotated[bool, typer.Option(
    "--oracle", help="Also replay Belady's offline oracle at every pool size and the "
                     "infinite-pool ceiling: reference lines for the curves, not policies.")]
HiddenOpt = Annotated[bool, typer.Option(
    "--hidden", help="Also accept hidden policies (registered, not --policy choices: the "
                     "baselines fifo, mru, filo) in --policy and -g.")]
DryOpt = Annotated[bool, typer.Option(
    "--dry-run", help="Check the grid and list its cells; replay nothing, change no file.")]
MaxCellsOpt = Annotated[int, typer.Option(
    "--max-cells", min=1, help=f"Refuse a grid of more cells than this (default "
                               f"{MAX_CELLS:,}); raise it for a larger sweep.")]
ProgressOpt = Annotated[bool, typer.Option(
    "--progress/--no-progress", help="Progress bar on a terminal.")]
# The timed replay's options: cli/sweep_timing.py (the axes), simulate's (the rest).


def sweep(
    ctx: typer.Context,
    grid_file: GridFileOpt = None,
    policy: PolicyOpt = None,
    vary: VaryOpt = None,
    pool_tokens: PoolOpt = None,
    page_size: PageOpt = None,
    workload: WorkloadOpt = None,
    trace: TraceOpt = None,
    param: ParamOpt = None,
    seeds: SeedsOpt = None,
    out: OutOpt = None,
    ray: RayOpt = None,
    jobs: JobsOpt = None,
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
    force: ForceOpt = False,
    oracle: OracleOpt = False,
    hidden: HiddenOpt = False,
    dry_run: DryOpt = False,
    progress: ProgressOpt = True,
    max_cells: MaxCellsOpt = MAX_CELLS,
    timing: TimingOpt = False,
    max_running: MaxRunningOpt = None,
    rate: RateOpt = None,
    cost_model: CostModelOpt = None,
    concurrency: ConcurrencyOpt = None,
    time_scale: TimeScaleOpt = None,
    slo_ttft: SloTtftOpt = None,
    slo_tpot: SloTpotOpt = None,
    chunked_prefill_size: ChunkedPrefillOpt = None,
    objective: ObjectiveOpt = None,
    host_tokens: HostTokensOpt = None,
    hicache_ratio: HicacheRatioOpt = None,
    write_policy: WritePolicyOpt = None,
    host_policy: HostPolicyOpt = None,
    write_threshold: WriteThresholdOpt = None,
    host_config: HostConfigOpt = None,
) -> None:
    """Sweep a grid of policy x config x pool size x workload x seed; one row per cell.

    With --timing, each cell runs the timed replay (TTFT, SLOs under load) and
    --max-running, --rate and --cost-model are axes of the grid too. --host-tokens
    (or --hicache-ratio), --write-policy and --host-policy add a host tier
    (SGLang's HiCache) and its axes.

    Exit codes: 0 every cell ran, 1 invalid grid (nothing ran), 2 usage or
    environment error, 3 some cells failed (their rows say why), 130 stopped
    by Ctrl-C (finished cells are kept in --out; rerun to resume).
    """
    mark_json(ctx.obj, json_out)
    plot_out = check_plot(plot, force=force)
    parts = parts_from_options(
        policies=policy or [], vary=vary or [], pool_tokens=pool_tokens or [],
        page_sizes=page_size or [], workloads=workload or [], traces=trace or [],
        params=param or [], seeds=seeds or [], oracle=oracle, hidden=hidden)
    parts = dataclasses.replace(parts, **timing_options(
        timing=timing, max_running=max_running or [], rate=rate or [],
        cost_model=cost_model or [], concurrency=concurrency, time_scale=time_scale,
        slo_ttft=slo_ttft, slo_tpot=slo_tpot, chunked_prefill_size=chunked_prefill_size,
        objective=objective))
    parts = dataclasses.replace(parts, **host_options(
        host_tokens=host_tokens or [], hicache_ratio=hicache_ratio or [],
        write_policy=write_policy or [], host_policy=host_policy or [],
        write_threshold=write_threshold, host_config=host_config or []))
    plan, objective = _plan(parts, grid_file, out, dry_run=dry_run, max_cells=max_cells,
                            reads=at_files("--host-config", host_config or []))
    plot_out = None if plot_out is None else plot_out.reading(plan.inputs)
    wls = _workloads(plan)  # a missing or bad trace fails now, dry run or not
    executor = ray_executor(ray) if ray is not None and plan.todo and not dry_run \
        else local_executor(jobs)
    kept = f"; {len(plan.kept):,} already in {out}" if plan.kept else ""
    output.note(f"sweep: {plan.size_text}{kept}; {len(plan.todo):,} to run"
                + (f" on {_where(ray, jobs, len(plan.todo))}" if plan.todo and not dry_run
                   else ""))
    _notes(plan, out, dry_run)
    if dry_run:
        _list_cells(plan, json_out)
        return

    def on_row(row: dict[str, Any]) -> None:
        if row.get("status") != "ok":
            point = ", ".join(x for x in (point_label(row), host_point_label(row)) if x)
            at = f" ({point})" if point else ""
            output.note(f"cell failed: {row['policy']} {row.get('config') or ''} "
                        f"pool {row.get('pool_tokens')} {row['workload']}{at}: "
                        f"{row.get('error')}")

    t0 = time.perf_counter()
    with output.progress_bar("sweep", enabled=progress) as bar:
        outcome = run_sweep(plan, executor, progress=bar, on_row=on_row, workloads=wls)
    wall = time.perf_counter() - t0
    _report(plan, outcome, wall, json_out=json_out, out=out, objective=objective)
    if plot_out is not None and outcome.rows:
        from .sweep_plot import HOST_TITLE, TITLE, plot_curves, plot_host_curves

        tiers = host_curves(outcome.rows, objective)
        if tiers:  # a host tier's sweep: hit rate (p99 TTFT) over host size
            plot_host_curves(plot_out, tiers, HOST_TITLE, point_ceilings(outcome.rows))
        else:
            plot_curves(plot_out, curves(outcome.rows, objective), TITLE,
                        point_ceilings(outcome.rows))
        output.note(f"wrote plot {plot}")
    saved = f"; rows in {out}" if out is not None else ""
    output.note(f"wall time {wall:.2f} s for {outcome.ran} cells{saved}")
    if outcome.interrupted:
        output.note(f"interrupted: {outcome.ran} of {len(plan.todo)} cells finished and were "
                    "kept" + (f" in {out}; rerun the same command to resume" if out else ""))
        raise typer.Exit(EXIT_INTERRUPTED)
    if outcome.failed:
        output.note(f"{len(outcome.failed)} of {len(outcome.rows)} cells failed")
        raise typer.Exit(EXIT_CELLS_FAILED)
