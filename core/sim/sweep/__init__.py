"""Sweeps: policy x config x pool size x workload x seed grids, replayed locally or on Ray.

``plan_sweep(grid, out)`` expands and checks every cell before anything runs;
``run_sweep(plan, executor)`` replays the cells still to do with the
simulator's own :func:`~radix_evict.sim.replay.replay` and records a row per
cell as it finishes. ``summary`` reads the rows: best config per policy per
workload, hit-rate curves over pool sizes.
"""

from radix_evict.sim.sweep.check import SweepGridError, check_cells
from radix_evict.sim.sweep.grid import Cell, Grid, PolicyAxes, Source
from radix_evict.sim.sweep.rows import comparable, run_cell
from radix_evict.sim.sweep.run import (
    MAX_CELLS,
    Executor,
    SweepOutcome,
    SweepPlan,
    SweepSizeError,
    local_executor,
    plan_sweep,
    ray_executor,
    run_sweep,
)
from radix_evict.sim.sweep.schema import ROW_FIELDS, TIMING_FIELDS, ResultRow
from radix_evict.sim.sweep.spec import GridParts, make_grid, make_grids, read_grid_file
from radix_evict.sim.sweep.store import ResultFile, ResultFileError
from radix_evict.sim.sweep.values import SweepValueError, parse_count, parse_values

__all__ = [
    "MAX_CELLS",
    "ROW_FIELDS",
    "TIMING_FIELDS",
    "Cell",
    "Executor",
    "Grid",
    "GridParts",
    "PolicyAxes",
    "ResultFile",
    "ResultFileError",
    "ResultRow",
    "Source",
    "SweepGridError",
    "SweepOutcome",
    "SweepPlan",
    "SweepSizeError",
    "SweepValueError",
    "check_cells",
    "comparable",
    "local_executor",
    "make_grid",
    "make_grids",
    "parse_count",
    "parse_values",
    "plan_sweep",
    "ray_executor",
    "read_grid_file",
    "run_cell",
    "run_sweep",
]
