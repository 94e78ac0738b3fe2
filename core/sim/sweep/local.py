"""The default executor: worker processes on this machine, one fork per cell.

Workers are forked from the process that built the workloads, so a trace
read once is shared by every cell (copy-on-write), not pickled per cell.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from radix_evict.sim.parallel import JobFailed, ProgressFn, stream_jobs
from radix_evict.sim.sweep.grid import Cell
from radix_evict.sim.sweep.rows import error_row, run_cell
from radix_evict.sim.sweep.sources import WorkloadKey
from radix_evict.sim.workloads import Workload


def run_local(
    cells: Sequence[Cell],
    workloads: Mapping[WorkloadKey, Workload],
    *,
    workers: int | None = None,
    progress: ProgressFn | None = None,
) -> Iterator[dict[str, Any]]:
    """Rows of ``cells`` as they finish, on ``workers`` processes (default: every usable core).

    ``progress(done, total)`` counts requests replayed across all cells.
    """

    def job(cell: Cell) -> Any:
        wl = workloads[cell.workload_key]
        return lambda report: run_cell(cell, wl, report)

    jobs = [job(c) for c in cells]
    sizes = [workloads[c.workload_key].num_requests for c in cells]
    for i, outcome in stream_jobs(jobs, sizes, workers, progress):
        yield error_row(cells[i], outcome.error) if isinstance(outcome, JobFailed) else outcome
