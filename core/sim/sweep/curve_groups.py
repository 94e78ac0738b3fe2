"""Sweep cells that one pool-size curve pass computes: lru at many pool sizes from one replay.

An lru cell with no host tier and no timing differs from its neighbours on the
pool axis only in pool size, and the lru pool-size curve
(:func:`radix_evict.sim.curve.pool_curve`) gives every pool size of one
workload, page size and config from one replay, each size's figures equal to
its own replay's (docs/pool-curve.md). :func:`plan_tasks` gathers such cells
into a :class:`CurveGroup` per (source, seed, page size, config) with at
least two pool sizes; :func:`run_task` runs a group with one curve pass and
returns one row per cell, the same row :func:`~radix_evict.sim.sweep.rows.run_cell`
gives (timings aside) with ``via`` ``curve`` (``replay`` for a size the pass
handed to its own replay). Oracle cells of one workload and page size (token and
timed, every pool size) are one :class:`OracleGroup`: their replays run in one
process and share the oracle's future index (each cell still its own replay).
Every other cell stays a task of its own.

``RADIX_EVICT_SWEEP_CURVE=0`` in the environment (or ``run_sweep(...,
curve=False)``) turns both off: every cell its own task and replay, as before.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from radix_evict.sim.configs import resolve_config
from radix_evict.sim.curve import CURVE, REPLAY, CurvePoint, pool_curve
from radix_evict.sim.oracle import ORACLE, sharing
from radix_evict.sim.sweep.grid import Cell
from radix_evict.sim.sweep.rows import base_row, error_row, error_text, run_cell
from radix_evict.sim.sweep.schema import OK
from radix_evict.sim.workloads import Workload

__all__ = ["CURVE_ENV", "CURVE_POLICY", "CurveGroup", "OracleGroup", "Task", "curve_enabled",
           "eligible", "pass_notes", "plan_tasks", "run_group", "run_oracles", "run_task",
           "shared_of", "task_cells", "task_error_rows", "via_of"]

CURVE_ENV = "RADIX_EVICT_SWEEP_CURVE"  # "0" (or "off", "false", "no"): no curve passes
CURVE_POLICY = "lru"  # the one policy with the inclusion property (docs/pool-curve.md)


def curve_enabled() -> bool:
    """Whether sweeps use the curve (the default), as the environment says."""
    return os.environ.get(CURVE_ENV, "1").strip().lower() not in ("0", "off", "false", "no")


@dataclass(frozen=True)
class CurveGroup:
    """lru cells that differ only in pool size: one curve pass computes them all."""

    cells: tuple[Cell, ...]

    @property
    def workload_key(self) -> Any:
        return self.cells[0].workload_key

    @property
    def page_size(self) -> int:
        return self.cells[0].page_size

    def describe(self) -> str:
        first = self.cells[0]
        return (f"lru pool curve, {len(self.cells)} pool sizes, page {first.page_size}, "
                f"{first.source.label}" + ("" if first.seed is None else f", seed {first.seed}"))


@dataclass(frozen=True)
class OracleGroup:
    """Oracle cells of one workload and page size (token and timed, every pool size): run
    one after another in one process, sharing the oracle's pool-independent work (its
    future index, the timed oracle's prompts: :func:`radix_evict.sim.oracle.sharing`).

    Each cell is still its own replay, figure for figure (``via`` ``replay``).
    """

    cells: tuple[Cell, ...]

    @property
    def workload_key(self) -> Any:
        return self.cells[0].workload_key

    def describe(self) -> str:
        first = self.cells[0]
        return (f"oracle, {len(self.cells)} cells, page {first.page_size}, "
                f"{first.source.label}" + ("" if first.seed is None else f", seed {first.seed}"))


Task = Cell | CurveGroup | OracleGroup  # what an executor runs: one cell, or a group of cells


def eligible(cell: Cell) -> bool:
    """An lru cell the curve can compute: no host tier, no timing, no hybrid model (a
    reference is not lru)."""
    return (cell.policy == CURVE_POLICY and cell.timing is None and cell.host is None
            and cell.hybrid is None)


def _group_key(cell: Cell) -> tuple[Any, ...] | None:
    """The group a cell joins (None: a task of its own): a curve pass, or an oracle group."""
    if eligible(cell):
        return (CURVE_POLICY, cell.source, cell.seed, cell.page_size, cell.config_json)
    if cell.policy == ORACLE and cell.host is None:
        return (ORACLE, cell.source, cell.seed, cell.page_size)
    return None


def plan_tasks(cells: Sequence[Cell], curve: bool = True) -> list[Task]:
    """``cells`` as tasks: two or more eligible lru cells one :class:`CurveGroup`, two or
    more oracle cells of a workload and page size one :class:`OracleGroup` (each at its
    first cell's place), every other cell a task of its own."""
    if not curve:
        return list(cells)
    groups: dict[tuple[Any, ...], list[Cell]] = {}
    for c in cells:
        key = _group_key(c)
        if key is not None:
            groups.setdefault(key, []).append(c)
    grouped = {id(c): key for key, members in groups.items() if len(members) > 1
               for c in members}
    tasks: list[Task] = []
    placed: set[tuple[Any, ...]] = set()
    for c in cells:
        key = grouped.get(id(c))
        if key is None:
            tasks.append(c)
        elif key not in placed:
            placed.add(key)
            kind = CurveGroup if key[0] == CURVE_POLICY else OracleGroup
            tasks.append(kind(tuple(groups[key])))
    return tasks


def via_of(tasks: Sequence[Task]) -> dict[str, str]:
    """Cell key -> ``curve`` for each cell a curve pass will compute; other cells replay."""
    return {c.key: CURVE for t in tasks if isinstance(t, CurveGroup) for c in t.cells}


def shared_of(tasks: Sequence[Task]) -> dict[str, str]:
    """Cell key -> how a group shares its work, for each cell in a group (a dry run's mark)."""
    return {c.key: "via curve" if isinstance(t, CurveGroup) else "oracle index shared"
            for t in tasks if not isinstance(t, Cell) for c in t.cells}


def pass_notes(tasks: Sequence[Task]) -> list[str]:
    """A line per group: which cells it computes and what they share, for a dry run (and a
    real run) to say."""
    off = f"{CURVE_ENV}=0 runs each on its own"
    notes = []
    for g in tasks:
        if isinstance(g, CurveGroup):
            pools = ", ".join("default" if c.pool_tokens is None else f"{c.pool_tokens:,}"
                              for c in g.cells)
            notes.append(f"{g.describe()}: pools {pools} from one pass (via curve; {off})")
        elif isinstance(g, OracleGroup):
            notes.append(f"{g.describe()}: one process, one future index for every pool "
                         f"size (each cell its own replay; {off})")
    return notes


def task_cells(task: Task) -> tuple[Cell, ...]:
    """The cells a task computes."""
    return (task,) if isinstance(task, Cell) else task.cells


def task_error_rows(task: Task, error: str) -> list[dict[str, Any]]:
    """Each cell of a task that failed as a whole: an error row."""
    return [error_row(c, error) for c in task_cells(task)]


def _curve_row(cell: Cell, point: CurvePoint, config: dict[str, Any] | None, source: str,
               seconds: float) -> dict[str, Any]:
    """The row ``run_cell`` would give ``cell`` (``result_row``'s keys), from a curve point."""
    row = base_row(cell)
    row.update({
        "config": config,
        "config_source": source,
        "pool_tokens": point.pool_tokens,
        "requests": point.requests,
        "hit_rate": point.hit_rate,
        "p50_uncached": point.p50_uncached,
        "p90_uncached": point.p90_uncached,
        "p99_uncached": point.p99_uncached,
        "mean_uncached": point.mean_uncached,
        "evicted_tokens": point.evicted_tokens,
        "failed_admissions": point.failed,
        # curve, or replay where the pass handed this size to its own replay
        "via": CURVE if point.source == CURVE else REPLAY,
        "replay_s": seconds,  # the group's wall time, shared evenly by its cells
        "cache_s": None,  # no cache operations of this cell's own were timed
        "status": OK,
    })
    return row


def run_group(group: CurveGroup, workload: Workload, progress: Any = None
              ) -> list[dict[str, Any]]:
    """One curve pass for the group's pool sizes; a row per cell (errors become rows)."""
    t0 = time.perf_counter()
    first = group.cells[0]
    try:
        run_config = resolve_config(workload, CURVE_POLICY, first.config)
        pools = [workload.default_pool_tokens if c.pool_tokens is None else c.pool_tokens
                 for c in group.cells]
        curve = pool_curve(workload, pools, page_size=group.page_size)
        points = [curve.point(p) for p in pools]
    except Exception as exc:  # a failed pass fails its cells, not the sweep
        return task_error_rows(group, f"pool curve: {error_text(exc)}")
    if progress is not None:
        progress(workload.num_requests, workload.num_requests)
    share = (time.perf_counter() - t0) / len(group.cells)
    config = run_config.as_dict()
    return [_curve_row(c, p, config, run_config.source, share)
            for c, p in zip(group.cells, points, strict=True)]


def run_oracles(group: OracleGroup, workload: Workload, progress: Any = None
                ) -> list[dict[str, Any]]:
    """Each oracle cell's own replay, one after another, its pool-independent work shared."""
    rows = []
    n, k = workload.num_requests, len(group.cells)
    with sharing():
        for i, cell in enumerate(group.cells):
            # the executor counts one workload's requests a task: each cell is 1/k of them
            step = None if progress is None else (
                lambda done, _total, i=i: progress((i * n + done) // k, n))
            rows.append(run_cell(cell, workload, step))
    return rows


def run_task(task: Task, workload: Workload, progress: Any = None) -> list[dict[str, Any]]:
    """The rows of one task: a cell's own replay, a group's curve pass, or an oracle group."""
    if isinstance(task, CurveGroup):
        return run_group(task, workload, progress)
    if isinstance(task, OracleGroup):
        return run_oracles(task, workload, progress)
    return [run_cell(task, workload, progress)]

