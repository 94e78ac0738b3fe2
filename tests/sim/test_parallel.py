"""Worker planning: how many processes run N equal replays on C cores."""

from __future__ import annotations

import pytest

import radix_evict.sim.parallel as parallel
from radix_evict.sim.parallel import MAX_WORKERS_PER_CORE, plan_workers, run_jobs


def makespan(jobs: int, workers: int, cores: int) -> float:
    """Job-times for ``jobs`` equal jobs on ``workers`` time-sliced processes and ``cores``."""
    full, rest = divmod(jobs, workers)
    return full * max(1.0, workers / cores) + (max(1.0, rest / cores) if rest else 0.0)


@pytest.mark.parametrize(
    "jobs, cores, expected",
    [
        (5, 2, 3),  # 3 share 2 cores (1.5), then 2 alone (1): 2.5 job-times, not 3 rounds
        (25, 2, 5),
        (4, 2, 2),
        (3, 2, 3),
        (2, 2, 2),
        (1, 2, 1),
        (1, 1, 1),
        (5, 1, 1),  # one core: running them one after another is as fast, with less memory
        (0, 4, 1),
        (6, 4, 6),
        (7, 2, 4),
    ],
)
def test_plan_workers_examples(jobs: int, cores: int, expected: int) -> None:
    assert plan_workers(jobs, cores) == expected


@pytest.mark.parametrize("cores", [1, 2, 3, 4, 8])
def test_plan_workers_is_the_smallest_count_with_the_shortest_makespan(cores: int) -> None:
    for jobs in range(1, 60):
        w = plan_workers(jobs, cores)
        hi = min(jobs, cores * MAX_WORKERS_PER_CORE)
        candidates = range(min(cores, jobs), hi + 1)
        best = min(makespan(jobs, x, cores) for x in candidates)
        assert w in candidates
        assert makespan(jobs, w, cores) == pytest.approx(best)
        assert all(makespan(jobs, x, cores) > best + 1e-9 for x in candidates if x < w)
        # never worse than one process per core
        assert makespan(jobs, w, cores) <= makespan(jobs, min(cores, jobs), cores) + 1e-9


def test_plan_workers_caps_processes_per_core() -> None:
    """Each worker holds a whole replay in memory: no more than the cap per core."""
    for jobs in (9, 13, 101, 997):
        assert plan_workers(jobs, 2) <= 2 * MAX_WORKERS_PER_CORE


def test_plan_workers_defaults_to_the_usable_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "usable_cores", lambda: 2)
    assert plan_workers(5) == 3
    monkeypatch.setattr(parallel, "usable_cores", lambda: 1)
    assert plan_workers(5) == 1


def test_run_jobs_plans_workers_unless_given(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []

    def plan(jobs: int, cores: int | None = None) -> int:
        asked.append(jobs)
        return 1  # in-process: the jobs below are closures over this test's state

    monkeypatch.setattr(parallel, "plan_workers", plan)
    jobs = [lambda _p, i=i: i * i for i in range(4)]
    assert run_jobs(jobs, [1] * 4, workers=None) == [0, 1, 4, 9]
    assert asked == [4]
    assert run_jobs(jobs, [1] * 4, workers=1) == [0, 1, 4, 9]
    assert asked == [4]  # an explicit count is used as given


def _freeze_count(report: object) -> int:
    import gc

    return gc.get_freeze_count()


def test_forked_jobs_see_the_parents_objects_frozen_and_the_parent_thaws_after() -> None:
    """A job's collections skip what the parent held when it forked (gc.freeze), and the
    parent's objects are collectable again once the jobs are done, or stopped early; for
    both ways of running jobs (streamed, one fork each, and a pool of workers)."""
    import gc

    gc.unfreeze()
    pooled = run_jobs([_freeze_count] * 3, [1, 1, 1], workers=2)
    assert all(n > 1000 for n in pooled), pooled
    assert gc.get_freeze_count() == 0
    outcomes = dict(parallel.stream_jobs([_freeze_count] * 3, [1, 1, 1], workers=2))
    assert len(outcomes) == 3 and all(n > 1000 for n in outcomes.values()), outcomes
    assert gc.get_freeze_count() == 0
    stopped = parallel.stream_jobs([_freeze_count] * 3, [1, 1, 1], workers=1)
    next(stopped)
    stopped.close()
    assert gc.get_freeze_count() == 0


def test_a_callers_own_freeze_is_left_as_it_was() -> None:
    """Unfreezing is all or nothing: objects the caller froze before running jobs stay
    frozen after them (the count may drop as frozen objects are freed, never to 0)."""
    import gc

    gc.unfreeze()
    gc.freeze()
    try:
        assert gc.get_freeze_count() > 0
        dict(parallel.stream_jobs([_freeze_count] * 2, [1, 1], workers=2))
        assert gc.get_freeze_count() > 0
        run_jobs([_freeze_count] * 2, [1, 1], workers=2)
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
