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

:func:`stream_jobs` is the streaming form that sweeps use: one forked process
per job, results yielded as each finishes, a job that raises or a worker that
dies reported as a :class:`JobFailed` while the other jobs go on.

Workers die with this process and never outlive a cancelled run. Each one
asks the kernel to kill it when its parent dies (``PR_SET_PDEATHSIG`` on
Linux; elsewhere a thread watches the parent's pid), so a ``kill`` of the
parent, even ``kill -9``, leaves no orphan replaying on. Ctrl-C is the
parent's to handle: workers ignore SIGINT (a terminal sends it to the whole
process group), and when the parent's wait is interrupted, by Ctrl-C or any
other exception, it kills the running workers at once rather than waiting
for their replays to finish, then re-raises.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from multiprocessing import connection
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


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
PARENT_POLL_S = 0.5  # how often the fallback watcher looks for its parent


def _worker_start(parent: int) -> None:
    """First thing in each worker: leave Ctrl-C to the parent, and die with it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with(parent)


def _die_with(parent: int) -> None:
    """End this process when ``parent`` does (now, if it already has)."""
    if not _kill_me_with_parent():
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True,
                         name="radix-evict-parent-watch").start()
    if os.getppid() != parent:  # the parent died before we asked
        os._exit(1)


def _kill_me_with_parent() -> bool:
    """Ask Linux to SIGKILL this process when its parent exits; False where that is unavailable."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _watch_parent(parent: int) -> None:
    """Fallback for :func:`_kill_me_with_parent`: exit once the parent is gone."""
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_S)
    os._exit(1)


def _kill_workers(pool: ProcessPoolExecutor) -> None:
    """Stop a pool now: kill its workers (their replays are abandoned) and reap them."""
    procs = list((getattr(pool, "_processes", None) or {}).values()) or mp.active_children()
    for proc in procs:
        with contextlib.suppress(OSError, ValueError):
            proc.kill()
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        with contextlib.suppress(OSError, ValueError, AssertionError):
            proc.join(timeout=1.0)


def _single_threaded_torch() -> None:
    # A forked child inherits torch's OpenMP pool without its threads: its first
    # parallel kernel would wait for them forever. One thread runs kernels inline.
    import torch

    torch.set_num_threads(1)


def _report_to(i: int) -> ProgressFn:
    def report(done: int, _total: int) -> None:
        _done[i] = done

    return report


def _run_in_child(i: int) -> Any:
    _single_threaded_torch()
    return _jobs[i](_report_to(i))


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
    with _published_for_forks(jobs, ctx):
        pool = ProcessPoolExecutor(max_workers=n, mp_context=ctx, initializer=_worker_start,
                                   initargs=(os.getpid(),))
        try:
            _freeze_for_fork()  # the pool forks its workers as the jobs are submitted
            futures = [pool.submit(_run_in_child, i) for i in range(len(jobs))]
            pending = set(futures)
            while pending:
                _, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                if progress is not None:
                    progress(min(sum(_done), total), total)
            out = [f.result() for f in futures]
        except BaseException:  # Ctrl-C, or a job that raised: the others stop now
            _kill_workers(pool)
            raise
        else:
            pool.shutdown(wait=True)
    if progress is not None:
        progress(total, total)
    return out


@contextlib.contextmanager
def _published_for_forks(jobs: Sequence[Job[Any]], ctx: Any) -> Iterator[None]:
    """``jobs`` where forked children read them, beside the shared progress array; both
    cleared when the jobs end or stop, and the parent thawed if this call froze it.

    A caller that had frozen objects itself keeps its freeze (unfreezing is all
    or nothing). One place for what both ways of running jobs set up and undo.
    """
    global _jobs, _done
    thaw = gc.get_freeze_count() == 0
    _jobs, _done = jobs, ctx.Array("q", len(jobs), lock=False)
    try:
        yield
    finally:
        _jobs, _done = (), None
        if thaw:
            gc.unfreeze()


def _freeze_for_fork() -> None:
    """Freeze the parent's objects just before a fork (thawed once the jobs end).

    A child's collections then skip everything the parent holds (its modules,
    the workloads): less to traverse in every job, and the parent's pages stay
    shared instead of being copied as the collector marks them (the use the
    Python docs give for ``gc.freeze``).
    """
    gc.freeze()


@dataclass(frozen=True)
class JobFailed:
    """A job that raised, or whose worker process died: ``error`` says which and why."""

    error: str


def _failure(exc: BaseException) -> JobFailed:
    return JobFailed(f"{type(exc).__name__}: {exc}")


def _start_shielded(proc: Any) -> None:
    """Fork ``proc`` with SIGINT held back, so Ctrl-C during the fork is not lost.

    A KeyboardInterrupt raised inside fork's at-fork handlers is swallowed
    ("Exception ignored"); blocked, the signal waits and arrives just after.
    The child starts with it blocked too, and ignores it before unblocking.
    """
    held = {signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        proc.start()
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, held)


def _stream_child(i: int, parent: int, conn: connection.Connection) -> None:
    # Ctrl-C reaches the whole process group; the parent alone decides what stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _die_with(parent)
    _single_threaded_torch()
    try:
        out: Any = _jobs[i](_report_to(i))
    except BaseException as exc:  # the parent records it; the other jobs go on
        out = _failure(exc)
    try:
        conn.send(out)
    except Exception as exc:  # a result that does not pickle
        conn.send(JobFailed(f"the result could not be sent back: {_failure(exc).error}"))
    conn.close()


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def _collect(proc: Any, conn: connection.Connection) -> Any:
    """A finished worker's result, or a JobFailed saying how the worker ended."""
    out: Any = None
    got = False
    try:
        if conn.poll():
            out, got = conn.recv(), True
    except (EOFError, OSError):
        pass
    finally:
        conn.close()
    proc.join()
    if got:
        return out
    return JobFailed(f"worker process died ({_exit_text(proc.exitcode)}) before returning "
                     "a result")


def stream_jobs(
    jobs: Sequence[Job[T]],
    sizes: Sequence[int],
    workers: int | None = None,
    progress: ProgressFn | None = None,
) -> Iterator[tuple[int, T | JobFailed]]:
    """Run each job in its own forked process, ``workers`` at a time; yield (index, outcome).

    Outcomes come as jobs finish, not in job order. A fork per job costs ~ms,
    and isolates jobs: one that raises, or a worker that dies (killed, out of
    memory, a crashing extension), yields a JobFailed and the rest go on.
    ``workers`` defaults to the usable cores; one worker still forks, so a
    crash stays a failed job. Stopping the iteration (or Ctrl-C while
    waiting) kills the workers still running; what was yielded stays
    yielded. Without ``fork`` the jobs run here, in order, with the same
    failure reporting (but a crash ends this process).
    """
    total = sum(sizes)
    n = max(1, min(len(jobs), usable_cores() if workers is None else workers))
    if "fork" not in mp.get_all_start_methods():
        offset = 0
        for i, (job, size) in enumerate(zip(jobs, sizes, strict=True)):
            report = None
            if progress is not None:
                report = lambda d, _t, at=offset: progress(at + d, total)  # noqa: E731
            try:
                out: Any = job(report)
            except Exception as exc:
                out = _failure(exc)
            offset += size
            yield i, out
        return
    ctx = mp.get_context("fork")
    with _published_for_forks(jobs, ctx):
        running: dict[int, tuple[Any, connection.Connection]] = {}
        finished = [False] * len(jobs)
        started = 0
        try:
            while started < len(jobs) or running:
                while started < len(jobs) and len(running) < n:
                    recv, send = ctx.Pipe(duplex=False)
                    proc = ctx.Process(target=_stream_child, args=(started, os.getpid(), send),
                                       daemon=True)
                    _freeze_for_fork()
                    _start_shielded(proc)
                    send.close()
                    running[started] = (proc, recv)
                    started += 1
                owner: dict[Any, int] = {}
                for i, (proc, conn) in running.items():
                    owner[conn] = owner[proc.sentinel] = i
                ready = connection.wait(list(owner), timeout=0.2)
                for i in sorted({owner[r] for r in ready}):
                    proc, conn = running.pop(i)
                    outcome = _collect(proc, conn)
                    finished[i] = True
                    yield i, outcome
                if progress is not None:
                    done = sum(size if end else _done[i]
                               for i, (size, end) in enumerate(zip(sizes, finished, strict=True)))
                    progress(min(done, total), total)
        finally:
            for proc, conn in running.values():
                proc.kill()
                proc.join()
                conn.close()
