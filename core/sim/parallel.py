"""Run independent replays in worker processes.

A replay is single-threaded Python, so comparing five policies on a 2-core
machine takes about half the time when the runs go to worker processes. How
many workers: see :func:`plan_workers` (five equal replays on two cores run
as three processes that share the cores, then two, not as three rounds of two). Workers
are forked, so they inherit the workload (a parsed trace, say) instead of
receiving a pickled copy; where ``fork`` is unavailable, or one worker is
asked for, the jobs run one after another in this process. Results come
back in job order, so the output does not depend on the number of workers.
Workers report progress by writing their step count into a shared array that
this process polls: no pipe to fill up, nothing to drain at the end.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any, TypeVar

T = TypeVar("T")
ProgressFn = Callable[[int, int], None]
# A job: called with its own progress callback (done, total), returns its result.
Job = Callable[[ProgressFn | None], T]

_jobs: Sequence[Job[Any]] = ()
_done: Any = None  # shared int64 array: steps each job has reported


# At most this many worker processes per core. Every worker holds a whole replay
# (its pool and tree) in memory, so peak memory is about workers x one replay;
# the cap costs little time, since W = cores alone is within one job of the ideal.
MAX_WORKERS_PER_CORE = 4


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def plan_workers(jobs: int, cores: int | None = None) -> int:
    """How many processes to run ``jobs`` equal jobs in, on ``cores`` cores (default: usable).

    Running more processes than cores lets the OS time-slice them: a batch of
    W jobs at once on C cores takes max(1, W / C) job-times. The pool runs
    ``jobs // W`` full batches of W, then the remaining ``jobs % W`` at once,
    so the makespan is (jobs // W) * max(1, W/C) + max(1, (jobs % W) / C)
    (the last term only when jobs % W > 0). This returns the smallest W in
    [min(C, jobs), jobs] that minimises it: 5 jobs on 2 cores -> 3 (2.5
    job-times: three at 2/3 speed, then two alone; 2 workers take 3 rounds),
    25 -> 5, 4 -> 2, one job or one core -> 1. The smallest, because every
    extra process costs CPU (measured: 5 processes for 5 replays on 2 cores
    take ~6% more CPU time than 3, and finish later) and memory: each worker
    holds a whole replay (its pool and tree), so peak memory is about W
    replays. For the same reason W is capped at MAX_WORKERS_PER_CORE x C.
    """
    c = max(1, usable_cores() if cores is None else cores)
    if jobs <= 1 or c == 1:
        return 1

    def makespan(w: int) -> int:  # in units of job-time / C, so it stays an integer
        rest = jobs % w
        return jobs // w * max(c, w) + (max(c, rest) if rest else 0)

    hi = min(jobs, c * MAX_WORKERS_PER_CORE)
    return min(range(min(c, jobs), hi + 1), key=lambda w: (makespan(w), w))


def _run_in_child(i: int) -> Any:
    # A forked child inherits torch's OpenMP pool without its threads: its first
    # parallel kernel would wait for them forever. One thread runs kernels inline.
    import torch

    torch.set_num_threads(1)

    def report(done: int, _total: int) -> None:
        _done[i] = done

    return _jobs[i](report)


def run_jobs(
    jobs: Sequence[Job[T]],
    sizes: Sequence[int],
    workers: int | None = 1,
    progress: ProgressFn | None = None,
) -> list[T]:
    """Run ``jobs`` (job ``i`` reports up to ``sizes[i]`` steps) on ``workers`` processes.

    ``workers=None`` lets :func:`plan_workers` choose (the jobs are taken to
    be about equal); a number is used as given, up to one process per job.
    """
    global _jobs, _done
    total = sum(sizes)
    n = plan_workers(len(jobs)) if workers is None else max(1, workers)
    n = min(n, len(jobs))
    if n <= 1 or "fork" not in mp.get_all_start_methods():
        results: list[T] = []
        offset = 0
        for job, size in zip(jobs, sizes, strict=True):
            report = None
            if progress is not None:
                report = lambda d, _t, at=offset: progress(at + d, total)  # noqa: E731
            results.append(job(report))
            offset += size
        return results
    ctx = mp.get_context("fork")
    _jobs, _done = jobs, ctx.Array("q", len(jobs), lock=False)
    try:
        with ProcessPoolExecutor(max_workers=n, mp_context=ctx) as pool:
            futures = [pool.submit(_run_in_child, i) for i in range(len(jobs))]
            pending = set(futures)
            while pending:
                _, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                if progress is not None:
                    progress(min(sum(_done), total), total)
            out = [f.result() for f in futures]
        if progress is not None:
            progress(total, total)
        return out
    finally:
        _jobs, _done = (), None
