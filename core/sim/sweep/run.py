"""Planning and running a sweep: validate every cell, skip the finished ones, stream the rest.

:func:`plan_sweep` does everything that can fail fast (expanding and
checking the grid, reading the result file); :func:`run_sweep` then builds
each workload once, hands the cells to an executor and records each row as
it arrives. Ctrl-C (KeyboardInterrupt) stops the executor, and the rows that
finished are already in the result file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from radix_evict.errors import RadixEvictError
from radix_evict.outputs import Input, refuse_inputs
from radix_evict.sim.parallel import ProgressFn
from radix_evict.sim.sweep.check import check_cells, merge_notes
from radix_evict.sim.sweep.fingerprints import cell_reads
from radix_evict.sim.sweep.grid import Cell, Grid
from radix_evict.sim.sweep.rows import OK
from radix_evict.sim.sweep.sources import WorkloadKey, build_workloads
from radix_evict.sim.sweep.store import ResultFile
from radix_evict.sim.workloads import Workload

Row = dict[str, Any]
# An executor: (cells, their workloads, progress) -> rows as the cells finish. One that
# takes tasks (:func:`takes_tasks`: the local and Ray executors) gets CurveGroups among the
# cells too, each giving a row per cell it holds (radix_evict.sim.sweep.curve_groups).
Executor = Callable[[Sequence[Any], Mapping[WorkloadKey, Workload], ProgressFn | None],
                    Iterator[Row]]
TAKES_TASKS = "takes_tasks"  # an executor's attribute: True when it runs CurveGroups


def takes_tasks(executor: Executor) -> Executor:
    """Mark ``executor`` as one that runs CurveGroups (:func:`curve_groups.run_task`)."""
    setattr(executor, TAKES_TASKS, True)
    return executor


def local_executor(workers: int | None = None) -> Executor:
    """Worker processes on this machine (default: one per usable core)."""
    from radix_evict.sim.sweep.local import run_local

    def run(tasks: Sequence[Any], wls: Mapping[WorkloadKey, Workload],
            progress: ProgressFn | None) -> Iterator[Row]:
        return run_local(tasks, wls, workers=workers, progress=progress)

    return takes_tasks(run)


def ray_executor(address: str | None = "auto") -> Executor:
    """Ray tasks on the cluster at ``address`` (see ``ray_executor.run_ray``)."""
    from radix_evict.sim.sweep.ray_executor import import_ray, run_ray

    import_ray()  # fail now, before the workloads are built, if Ray is missing

    def run(tasks: Sequence[Any], wls: Mapping[WorkloadKey, Workload],
            progress: ProgressFn | None) -> Iterator[Row]:
        return run_ray(tasks, wls, address=address, progress=progress)

    return takes_tasks(run)


MAX_CELLS = 10_000  # a grid larger than this needs --max-cells: a typo should not run for days


class SweepSizeError(RadixEvictError, ValueError):
    """The grid multiplies to more cells than allowed; nothing was expanded or run."""


@dataclass
class SweepPlan:
    """A checked grid: its cells, those still to run, and the rows a result file already has.

    ``grids`` holds the grid, or the several grids swept as one (a grid file's
    ``grids``: their cells in order, a cell two grids list once). ``notes``
    say where a grid listed one cell twice in effect (configs equal once
    validated, pool sizes equal in whole pages).
    """

    grids: tuple[Grid, ...]
    cells: list[Cell]
    todo: list[Cell]
    kept: dict[str, Row]
    results: ResultFile | None = None
    notes: list[str] = field(default_factory=list)
    sizes: list[str] = field(default_factory=list)  # each grid's size text, as it ran
    inputs: list[Input] = field(default_factory=list)  # every file the sweep reads
    via: dict[str, str] = field(default_factory=dict)  # key -> ``curve``: a curve pass's cells
    shared: dict[str, str] = field(default_factory=dict)  # key -> what its group shares

    def via_mark(self, cell: Cell) -> str:
        """``  (via curve)`` for a cell to run that a curve pass computes, ``  (oracle index
        shared)`` for an oracle cell that shares its group's work; else nothing."""
        mark = self.shared.get(cell.key)
        return f"  ({mark})" if mark else ""

    @property
    def timed(self) -> bool:
        """Whether any grid runs the timed replay (its rows have the timed columns)."""
        return any(g.timing is not None for g in self.grids)

    @property
    def host(self) -> bool:
        """Whether any cell has a host tier (its rows have the host columns)."""
        return any(c.host is not None for c in self.cells)

    @property
    def todo_keys(self) -> set[str]:
        """Keys of the cells still to run (a set: a dry run of 10^4 cells asks 10^4 times)."""
        return {c.key for c in self.todo}

    @property
    def size_text(self) -> str:
        """E.g. ``2 policy configs x 2 pool sizes x 1 workload x 1 seed + 3 reference cells``.

        Several grids: each one's axes in parentheses, joined by ``+``.
        """
        refs = sum(c.is_reference for c in self.cells)
        extra = f" + {refs} reference cells (oracle, ceiling)" if refs else ""
        sizes = self.sizes or [g.size_text(self.cells) for g in self.grids]
        axes = sizes[0] if len(sizes) == 1 else " + ".join(f"({s})" for s in sizes)
        return (f"{axes}{extra} = {len(self.cells):,} "
                f"cell{'s' * (len(self.cells) != 1)}")


@dataclass
class SweepOutcome:
    """The rows of the grid's cells (kept ones too), in grid order, and how the run ended."""

    rows: list[Row]
    ran: int
    interrupted: bool = False
    failed: list[Row] = field(default_factory=list)


def plan_sweep(grid: Grid | Sequence[Grid], out: Path | None = None, *, write: bool = True,
               max_cells: int = MAX_CELLS, inputs: Sequence[Input] = ()) -> SweepPlan:
    """Expand and check ``grid`` (SweepGridError names bad cells); skip cells ``out`` has.

    ``grid`` may be several grids swept as one: their cells in order, each
    cell once (timed and untimed grids may mix; their rows share the result
    file; so may cells with and without a host tier). More than ``max_cells`` cells is a
    SweepSizeError before any is
    expanded. With ``write`` the result file is locked for this sweep
    (ResultFileError if another sweep holds it); without (a dry run) it is
    only read. Either way nothing in it changes here. ``out`` may not be a file the
    sweep reads (its traces, the files its configs name, or ``inputs``: a grid file).
    Unless ``RADIX_EVICT_SWEEP_CURVE=0``, ``via``, ``shared`` and ``notes`` say which
    cells to run one pool-size curve pass computes and which oracle cells share their
    future index (``curve_groups.plan_tasks``), as a dry run shows.
    """
    from radix_evict.sim.sweep.curve_groups import (
        curve_enabled,
        pass_notes,
        plan_tasks,
        shared_of,
        via_of,
    )

    grids = (grid,) if isinstance(grid, Grid) else tuple(grid)
    if not grids:
        raise ValueError("plan_sweep: no grid")
    count = sum(g.count() for g in grids)
    if count > max_cells:
        what = "the grid multiplies" if len(grids) == 1 else f"the {len(grids)} grids add up"
        raise SweepSizeError(f"{what} to {count:,} cells, over the limit of "
                             f"{max_cells:,}; narrow an axis, or raise the limit with "
                             f"--max-cells {count}")
    each = [g.cells() for g in grids]
    cells = list({c.key: c for part in each for c in part}.values())
    check_cells(cells)
    reads = [*inputs, *cell_reads(cells)]
    if out is not None:
        refuse_inputs("--out", out, "sweep result file", reads)
    results = (ResultFile(out, write=write, timed=any(g.timing is not None for g in grids),
                          host=any(c.host is not None for c in cells),
                          fleet=any(c.fleet is not None for c in cells),
                          admission=any(c.host is not None and c.host.admission is not None
                                        for c in cells),
                          hybrid=any(c.hybrid is not None for c in cells))
               if out is not None else None)
    finished = results.finished() if results is not None else set()
    kept = {c.key: results.rows[c.key] for c in cells if results and c.key in finished}
    todo = [c for c in cells if c.key not in finished]
    notes = list(dict.fromkeys(n for g, part in zip(grids, each, strict=True)
                               for n in merge_notes(g, part)))
    sizes = [g.size_text(part) for g, part in zip(grids, each, strict=True)]
    via: dict[str, str] = {}
    shared: dict[str, str] = {}
    if curve_enabled():  # which cells to run share a pass or work, said before running
        tasks = plan_tasks(todo)
        via, shared = via_of(tasks), shared_of(tasks)
        notes += pass_notes(tasks)
    return SweepPlan(grids, cells, todo, kept, results, notes, sizes, reads, via, shared)


def run_sweep(
    plan: SweepPlan,
    executor: Executor | None = None,
    *,
    progress: ProgressFn | None = None,
    on_row: Callable[[Row], None] | None = None,
    workloads: Mapping[WorkloadKey, Workload] | None = None,
    curve: bool | None = None,
) -> SweepOutcome:
    """Run ``plan.todo`` (default executor: local processes); Ctrl-C keeps what finished.

    ``workloads`` may pass workloads already built (by cell workload key).
    With ``curve`` (default: unless ``RADIX_EVICT_SWEEP_CURVE=0``), lru cells
    with no host tier and no timing that differ only in pool size are
    computed by one pool-size curve pass per group (``curve_groups``), when
    the executor takes such tasks; their rows equal the per-size replays'
    (timings aside) and say ``via: curve``.
    """
    from radix_evict.sim.sweep.curve_groups import curve_enabled, plan_tasks

    run = executor or local_executor()
    use_curve = (curve_enabled() if curve is None else curve) and bool(
        getattr(run, TAKES_TASKS, False))
    new: dict[str, Row] = {}
    interrupted = False
    try:
        if plan.results is not None:
            plan.results.repair()  # drops an unfinished last line, now that it is ours
        if plan.todo:
            wls = dict(workloads) if workloads is not None else {}
            missing = [c for c in plan.todo if c.workload_key not in wls]
            wls.update(build_workloads(missing))
            rows = run(plan_tasks(plan.todo, use_curve), wls, progress)
            try:
                for row in rows:
                    new[row["cell"]] = row
                    if plan.results is not None:
                        plan.results.add(row)
                    if on_row is not None:
                        on_row(row)
            finally:
                close = getattr(rows, "close", None)
                if close is not None:
                    close()  # stops the executor's workers at once, even on Ctrl-C
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if plan.results is not None:
            plan.results.close()
    every = {**plan.kept, **new}
    ordered = [every[c.key] for c in plan.cells if c.key in every]
    return SweepOutcome(ordered, len(new), interrupted,
                        [r for r in ordered if r.get("status") != OK])
