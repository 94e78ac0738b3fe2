"""Run independent replays in worker processes.

A replay is single-threaded Python, so comparing five policies on a 2-core
machine takes half the time when the runs go to two processes. Workers are
forked, so they inherit the workload (a parsed trace, say) instead of
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


def default_workers() -> int:
    """One worker per core this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


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
    """Run ``jobs`` (job ``i`` reports up to ``sizes[i]`` steps) on ``workers`` processes."""
    global _jobs, _done
    total = sum(sizes)
    n = default_workers() if workers is None else max(1, workers)
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
