"""The default executor: worker processes on this machine, one fork per cell.

Workers are forked from the process that built the workloads, so a trace
read once is shared by every cell (copy-on-write), not pickled per cell. A
CurveGroup (lru at several pool sizes, one curve pass) is one job.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from radix_evict.sim.parallel import JobFailed, ProgressFn, stream_jobs
from radix_evict.sim.sweep.curve_groups import Task, run_task, task_error_rows
from radix_evict.sim.sweep.sources import WorkloadKey
from radix_evict.sim.workloads import Workload


def run_local(
    cells: Sequence[Task],
    workloads: Mapping[WorkloadKey, Workload],
    *,
    workers: int | None = None,
    progress: ProgressFn | None = None,
) -> Iterator[dict[str, Any]]:
    """Rows of ``cells`` as they finish, on ``workers`` processes (default: every usable core).

    ``cells`` may hold CurveGroups (one job, a row per cell of the group).
    ``progress(done, total)`` counts requests replayed across all cells.
    """

    def job(task: Task) -> Any:
        wl = workloads[task.workload_key]
        return lambda report: run_task(task, wl, report)

    jobs = [job(c) for c in cells]
    sizes = [workloads[c.workload_key].num_requests for c in cells]
    for i, outcome in stream_jobs(jobs, sizes, workers, progress):
        if isinstance(outcome, JobFailed):
            yield from task_error_rows(cells[i], outcome.error)
        else:
            yield from outcome
