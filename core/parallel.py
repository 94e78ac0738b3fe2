"""Run independent replays in worker processes.

A replay is single-threaded Python, so comparing five policies on a 2-core
machine takes half the time when the runs go to two processes. Workers are
forked, so they inherit the workload (a parsed trace, say) instead of
receiving a pickled copy; where ``fork`` is unavailable, or one worker is
asked for, the jobs run one after another in this process. Results come
back in job order, so the output does not depend on the number of workers.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
ProgressFn = Callable[[int, int], None]
# A job: called with its own progress callback (done, total), returns its result.
Job = Callable[[ProgressFn | None], T]

_jobs: Sequence[Job[Any]] = ()
_updates: Any = None


def default_workers() -> int:
    """One worker per core this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _run_in_child(i: int) -> Any:
    def report(done: int, _total: int) -> None:
        _updates.put((i, done))

    return _jobs[i](report)


def run_jobs(
    jobs: Sequence[Job[T]],
    sizes: Sequence[int],
    workers: int | None = 1,
    progress: ProgressFn | None = None,
) -> list[T]:
    """Run ``jobs`` (job ``i`` reports up to ``sizes[i]`` steps) on ``workers`` processes."""
    global _jobs, _updates
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
    _jobs, _updates = jobs, ctx.Queue()
    done = [0] * len(jobs)
    try:
        with ProcessPoolExecutor(max_workers=n, mp_context=ctx) as pool:
            futures = [pool.submit(_run_in_child, i) for i in range(len(jobs))]
            while not all(f.done() for f in futures):
                try:
                    i, d = _updates.get(timeout=0.2)
                    done[i] = d
                except queue.Empty:
                    pass
                if progress is not None:
                    progress(sum(done), total)
            out = [f.result() for f in futures]
        if progress is not None:
            progress(total, total)
        return out
    finally:
        _jobs, _updates = (), None
